//! `#[instrument_wait]`: validation and code generation.

use crate::attr::Args;
use crate::rewrite::{call_site, spins_local, Rewrite};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::visit_mut::VisitMut;
use syn::{AttrStyle, Attribute, Error, Ident, Item, ItemFn, Visibility};

pub(crate) fn instrument_wait(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(err) => return with_error(item.clone(), not_a_fn(item, err)),
    };
    match (syn::parse2::<Args>(args), check(&func)) {
        (Ok(args), Ok(())) => expand(&args, func),
        (args, checked) => {
            let errors = combine([args.err(), checked.err()].into_iter().flatten());
            with_error(item, errors.expect("one of the two failed"))
        }
    }
}

/// All the errors in one, so rustc reports each of them.
pub(crate) fn combine(errors: impl IntoIterator<Item = Error>) -> Option<Error> {
    errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    })
}

/// The item as the user wrote it, plus the error: rustc then reports only ours,
/// not a cascade about a missing function.
fn with_error(item: TokenStream, err: Error) -> TokenStream {
    let err = err.to_compile_error();
    quote!(#item #err)
}

/// Points at the item's keyword (`struct`, `impl`, ...) when it is some other item;
/// keeps syn's own error when it does not parse as an item at all.
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

fn check(func: &ItemFn) -> syn::Result<()> {
    match &func.sig.constness {
        // The episode guard is opened and dropped at run time.
        Some(constness) => Err(Error::new_spanned(
            constness,
            "`#[instrument_wait]` cannot be used on a `const fn`",
        )),
        None => Ok(()),
    }
}

fn expand(args: &Args, func: ItemFn) -> TokenStream {
    let krate = match &args.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::yieldprof),
    };
    let ItemFn {
        attrs,
        vis,
        sig,
        mut block,
    } = func;
    let mut rewrite = Rewrite::new(&krate, sig.asyncness.is_none());
    rewrite.visit_block_mut(&mut block);
    let stmts = &block.stmts;

    // syn keeps the body's `#![...]` with the outer attributes; they must stay first
    // in the body.
    let (inner, outer): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|a| matches!(a.style, AttrStyle::Inner(_)));

    let name = match &args.name {
        Some(name) => quote!(::core::option::Option::Some(#name)),
        None => quote!(::core::option::Option::None),
    };
    let function = sig.ident.unraw().to_string();
    // The site's line is the `fn` name's, not the attribute's.
    let line = quote_spanned!(sig.ident.span()=> ::core::line!());
    let budget = match args.budget.as_slice() {
        [] => TokenStream::new(),
        limits => {
            let limits = limits.iter().map(|l| l.tokens(&krate));
            quote!(.with_budget(&[#(#limits),*]))
        }
    };
    let site = quote! {
        static __YIELDPROF_EPISODE: #krate::__private::EpisodeSite =
            #krate::__private::EpisodeSite::new(
                #name, ::core::module_path!(), #function, ::core::file!(), #line,
            )#budget;
    };

    let body = if sig.asyncness.is_some() {
        // The episode spans the polls of the body's future. `return` and `?` in the
        // body now leave the `async move` block, whose output is the fn's output.
        quote! {
            #site
            #krate::__private::instrument(&__YIELDPROF_EPISODE, async move { #(#stmts)* }).await
        }
    } else {
        let guard = Ident::new("__yieldprof_episode", Span::mixed_site());
        let spins = local_spins(&krate, &guard, &rewrite.spins);
        quote! {
            let #guard = { #site #krate::__private::enter(&__YIELDPROF_EPISODE) };
            #spins
            #(#stmts)*
        }
    };
    quote! {
        #(#outer)*
        #vis #sig {
            #(#inner)*
            #body
        }
    }
}

/// The counters of the spins written directly in the body, one per call site. Declared
/// after the guard, so they drop (and are added to the episode's node) before it closes.
fn local_spins(krate: &TokenStream, guard: &Ident, spins: &[Span]) -> TokenStream {
    if spins.is_empty() {
        return TokenStream::new();
    }
    let n = spins.len();
    let sites = spins.iter().map(|&span| call_site(krate, "Spin", span));
    let local = spins_local();
    quote! {
        let #local = {
            static __YIELDPROF_SPINS: [#krate::__private::CallSite; #n] = [#(#sites),*];
            #krate::__private::SpinCounts::new(&#guard, &__YIELDPROF_SPINS)
        };
    }
}
