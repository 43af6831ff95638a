//! `yieldprof::wait!(kind, expr)`: times `expr` as a wait of `kind` at its own line,
//! for waits the syntax cannot show (a call through a function pointer, inside
//! another macro, in a function of another crate).

use crate::calls::WAIT_KINDS;
use crate::rewrite::timed;
use crate::sites::Runtime;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Error, Expr, Ident, Token};

/// `$crate; kind, expr`: `yieldprof::wait!` passes its own path first.
struct Input {
    krate: TokenStream,
    kind: Ident,
    expr: Expr,
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut krate = TokenStream::new();
        while !input.peek(Token![;]) {
            krate.extend([input.parse::<TokenTree>()?]);
        }
        input.parse::<Token![;]>()?;
        // `yield` is a keyword: any identifier is taken, and checked against the kinds.
        let kind = Ident::parse_any(input)?;
        input.parse::<Token![,]>()?;
        let expr: Expr = input.parse()?;
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
        }
        Ok(Input { krate, kind, expr })
    }
}

pub(crate) fn wait(input: TokenStream) -> TokenStream {
    let Input { krate, kind, expr } = match syn::parse2::<Input>(input) {
        Ok(input) => input,
        Err(err) => return err.to_compile_error(),
    };
    let name = kind.to_string();
    let Some(&(_, kind)) = WAIT_KINDS.iter().find(|(n, _)| *n == name) else {
        let expected: Vec<String> = WAIT_KINDS.iter().map(|(n, _)| format!("`{n}`")).collect();
        let err = Error::new_spanned(
            &kind,
            format!(
                "unknown wait kind `{name}`; expected one of {}",
                expected.join(", ")
            ),
        )
        .to_compile_error();
        // The expression still follows, so rustc reports only the kind.
        return quote::quote!({ #err #expr });
    };
    let span = match &expr {
        Expr::MethodCall(call) => call.method.span(),
        e => e.span(),
    };
    timed(&Runtime::new(&krate), kind, span, expr).into_token_stream()
}
