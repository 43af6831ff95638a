//! The arguments of `#[instrument_wait(...)]`.

use crate::budget::{self, Entries, Limit};
use crate::parse::{combine, once, value};
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::token::Paren;
use syn::{parenthesized, Error, LitStr, Path, Token};

mod kw {
    syn::custom_keyword!(name);
    syn::custom_keyword!(budget);
}

/// `name = "frame name"`, `crate = some::path`, `budget(limit = value, ...)`, each at
/// most once.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) name: Option<LitStr>,
    pub(crate) krate: Option<Path>,
    /// Empty when no budget is declared (`budget()` is an error).
    pub(crate) budget: Vec<Limit>,
}

enum Arg {
    Name(kw::name, LitStr),
    Crate(Token![crate], Path),
    Budget(kw::budget, Paren, Entries),
}

impl Arg {
    /// The argument's key, for duplicate checks and error spans.
    fn key(&self) -> (&'static str, TokenStream) {
        match self {
            Arg::Name(k, _) => ("name", k.to_token_stream()),
            Arg::Crate(k, _) => ("crate", k.to_token_stream()),
            Arg::Budget(k, _, _) => ("budget", k.to_token_stream()),
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
        } else if lookahead.peek(kw::budget) {
            let key: kw::budget = input.parse()?;
            if !input.peek(Paren) {
                return Err(Error::new_spanned(
                    key,
                    format!("expected `{BUDGET_USAGE}`"),
                ));
            }
            let content;
            let paren = parenthesized!(content in input);
            let entries = Entries::parse_terminated(&content)?;
            Ok(Arg::Budget(key, paren, entries))
        } else {
            Err(lookahead.error())
        }
    }
}

const BUDGET_USAGE: &str = "budget(limit = value, ...)`, e.g. `budget(max_yields_per_episode = 16)";

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let list = Punctuated::<Arg, Token![,]>::parse_terminated(input)?;
        let mut args = Args::default();
        let mut seen = Vec::new();
        let mut errors = Vec::new();
        for arg in list {
            let (key, key_tokens) = arg.key();
            if let Err(e) = once(&mut seen, key, key_tokens, "argument") {
                errors.push(e);
                continue;
            }
            match arg {
                Arg::Name(_, name) if name.value().is_empty() => {
                    errors.push(Error::new_spanned(name, "`name` must not be empty"));
                }
                Arg::Name(_, name) => args.name = Some(name),
                Arg::Crate(_, path) => args.krate = Some(path),
                Arg::Budget(key, paren, entries) if entries.is_empty() => {
                    let mut tokens = key.to_token_stream();
                    paren.surround(&mut tokens, |_| ());
                    errors.push(Error::new_spanned(
                        tokens,
                        format!("`budget()` needs at least one limit: `{BUDGET_USAGE}`"),
                    ));
                }
                Arg::Budget(_, _, entries) => args.budget = budget::check(entries, &mut errors),
            }
        }
        match combine(errors) {
            Some(e) => Err(e),
            None => Ok(args),
        }
    }
}
