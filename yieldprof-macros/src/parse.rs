//! Parsing helpers shared by the argument parsers (`attr`, `budget`): each error at
//! the token the user wrote, and every error of one attribute reported together.

use quote::ToTokens;
use syn::parse::ParseStream;
use syn::{Error, Token};

/// Parses `= value` after `key`. A missing `=` or value is reported at the key or the
/// `=`: syn would point at the end of the input, i.e. the whole attribute.
pub(crate) fn value<T>(
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

/// Each key at most once per list: adds `name` to `seen`, or errs at `key` when it is
/// there already (`what` is the kind of key for the message: argument, limit).
pub(crate) fn once(
    seen: &mut Vec<String>,
    name: &str,
    key: impl ToTokens,
    what: &str,
) -> syn::Result<()> {
    if seen.iter().any(|s| s == name) {
        return Err(Error::new_spanned(
            key,
            format!("duplicate `{name}` {what}"),
        ));
    }
    seen.push(name.to_owned());
    Ok(())
}

/// All the errors in one, so rustc reports each of them.
pub(crate) fn combine(errors: impl IntoIterator<Item = Error>) -> Option<Error> {
    errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    })
}
