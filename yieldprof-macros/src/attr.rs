//! The arguments of `#[instrument_wait(...)]`.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Error, LitStr, Path, Token};

mod kw {
    syn::custom_keyword!(name);
}

/// `name = "frame name"`, `crate = some::path`, each at most once.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) name: Option<LitStr>,
    pub(crate) krate: Option<Path>,
}

enum Arg {
    Name(kw::name, LitStr),
    Crate(Token![crate], Path),
}

impl Arg {
    /// The argument's key, for duplicate checks and error spans.
    fn key(&self) -> (&'static str, TokenStream) {
        match self {
            Arg::Name(k, _) => ("name", k.to_token_stream()),
            Arg::Crate(k, _) => ("crate", k.to_token_stream()),
        }
    }
}

impl Parse for Arg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let lookahead = input.lookahead1();
        if lookahead.peek(kw::name) {
            let key: kw::name = input.parse()?;
            let name = value(input, &key, "name = \"frame name\"", |input| input.parse())?;
            Ok(Arg::Name(key, name))
        } else if lookahead.peek(Token![crate]) {
            let key: Token![crate] = input.parse()?;
            let path = value(input, &key, "crate = path::to::yieldprof", |input| {
                // serde-style `crate = "..."` is a common guess; say what is expected instead.
                if input.peek(LitStr) {
                    return Err(
                        input.error("expected a path, not a string: `crate = my_yieldprof`")
                    );
                }
                Path::parse_mod_style(input)
            })?;
            Ok(Arg::Crate(key, path))
        } else {
            Err(lookahead.error())
        }
    }
}

/// Parses `= value` after `key`. A missing `=` or value is reported at the key or the
/// `=`: syn would point at the end of the input, i.e. the whole attribute.
fn value<T>(
    input: ParseStream,
    key: &dyn ToTokens,
    usage: &str,
    parse: fn(ParseStream) -> syn::Result<T>,
) -> syn::Result<T> {
    if !input.peek(Token![=]) {
        return Err(Error::new_spanned(key, format!("expected `{usage}`")));
    }
    let eq: Token![=] = input.parse()?;
    if input.is_empty() || input.peek(Token![,]) {
        return Err(Error::new_spanned(
            eq,
            format!("expected a value: `{usage}`"),
        ));
    }
    parse(input)
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let list = Punctuated::<Arg, Token![,]>::parse_terminated(input)?;
        let mut args = Args::default();
        let mut seen = Vec::new();
        let mut errors = Vec::new();
        for arg in list {
            let (key, key_tokens) = arg.key();
            if seen.contains(&key) {
                errors.push(Error::new_spanned(
                    key_tokens,
                    format!("duplicate `{key}` argument"),
                ));
                continue;
            }
            seen.push(key);
            match arg {
                Arg::Name(_, name) if name.value().is_empty() => {
                    errors.push(Error::new_spanned(name, "`name` must not be empty"));
                }
                Arg::Name(_, name) => args.name = Some(name),
                Arg::Crate(_, path) => args.krate = Some(path),
            }
        }
        match crate::expand::combine(errors) {
            Some(e) => Err(e),
            None => Ok(args),
        }
    }
}
