//! The annotated item: a function with a body, and not a `const fn`.

use proc_macro2::{TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::{Attribute, Error, Item, ItemFn, Visibility};

/// The item as a function. Any other item is reported at its keyword (`struct`,
/// `impl`, ...); tokens that are no item at all keep syn's own error.
pub(crate) fn parse(item: TokenStream) -> syn::Result<ItemFn> {
    syn::parse2(item.clone()).map_err(|err| not_a_fn(item, err))
}

fn not_a_fn(item: TokenStream, err: Error) -> Error {
    if syn::parse2::<Item>(item.clone()).is_err() {
        return err;
    }
    let keyword = |input: ParseStream| {
        input.call(Attribute::parse_outer)?;
        input.parse::<Visibility>()?;
        let keyword: TokenTree = input.parse()?;
        input.parse::<TokenStream>()?;
        Ok(keyword)
    };
    match keyword.parse2(item) {
        Ok(keyword) => Error::new_spanned(
            keyword,
            "`#[instrument_wait]` applies to functions with a body",
        ),
        Err(_) => err,
    }
}

/// What the function must be beyond parsing: not `const`.
pub(crate) fn check(func: &ItemFn) -> syn::Result<()> {
    match &func.sig.constness {
        // The episode guard is opened and dropped at run time.
        Some(constness) => Err(Error::new_spanned(
            constness,
            "`#[instrument_wait]` cannot be used on a `const fn`",
        )),
        None => Ok(()),
    }
}
