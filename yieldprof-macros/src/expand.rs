//! `#[instrument_wait]` on proc_macro2 tokens: the input parsed and checked, then the
//! instrumented function, or the item as written plus every error found.

use crate::attr::Args;
use crate::item;
use crate::parse::combine;
use crate::rewrite::{spins_local, Rewrite};
use crate::sites::{self, Runtime};
use proc_macro2::{Span, TokenStream};
use proc_macro_crate::FoundCrate;
use quote::{quote, quote_spanned, ToTokens};
use std::sync::Mutex;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{AttrStyle, Block, Error, Expr, ExprAsync, Ident, ItemFn, ReturnType, Stmt};

pub(crate) fn instrument_wait(args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match item::parse(item.clone()) {
        Ok(func) => func,
        Err(err) => return with_error(item, err),
    };
    match (syn::parse2::<Args>(args), item::check(&func)) {
        (Ok(args), Ok(())) => expand(&args, func),
        (args, checked) => {
            let errors = combine([args.err(), checked.err()].into_iter().flatten());
            with_error(item, errors.expect("one of the two failed"))
        }
    }
}

/// The item as the user wrote it, plus the error: rustc then reports only ours,
/// not a cascade about a missing function.
fn with_error(item: TokenStream, err: Error) -> TokenStream {
    let err = err.to_compile_error();
    quote!(#item #err)
}

fn expand(args: &Args, func: ItemFn) -> TokenStream {
    let krate = match &args.krate {
        Some(path) => path.to_token_stream(),
        None => default_crate(),
    };
    let ItemFn {
        attrs,
        vis,
        sig,
        mut block,
    } = func;
    let mut boxed = match sig.asyncness {
        Some(_) => None,
        None => take_boxed_future(&mut block),
    };
    let rt = Runtime::new(&krate);
    let mut rewrite = Rewrite::new(&rt, sig.asyncness.is_some() || boxed.is_some());
    rewrite.visit_block_mut(&mut block);
    if let Some(future) = &mut boxed {
        rewrite.visit_block_mut(&mut future.block);
    }
    let stmts = &block.stmts;

    // syn keeps the body's `#![...]` with the outer attributes; they must stay first
    // in the body.
    let (inner, outer): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|a| matches!(a.style, AttrStyle::Inner(_)));

    // `::std`, never `::core`: an edition-2015 crate (threadpool, for one) has no
    // `core` in its extern prelude, only the `std` its root declares.
    let name = match &args.name {
        Some(name) => quote!(::std::option::Option::Some(#name)),
        None => quote!(::std::option::Option::None),
    };
    let function = sig.ident.unraw().to_string();
    // The site's line is the `fn` name's, not the attribute's.
    let line = quote_spanned!(sig.ident.span()=> ::std::line!());
    let budget = match args.budget.as_slice() {
        [] => TokenStream::new(),
        limits => {
            let limits = limits.iter().map(|l| l.tokens(&rt));
            quote!(.with_budget(&[#(#limits),*]))
        }
    };
    // An item nested in the fn: its `type_name` is the fn's full path, impl included
    // (`<chan::Recv as chan::Handle>::try_select::__YieldprofAt`), which no attribute
    // on a method can see otherwise.
    let episode = quote! {
        #rt::EpisodeSite::new(#name, ::std::module_path!(), #function, ::std::file!(), #line)
            .within(::std::any::type_name::<__YieldprofAt>)#budget
    };
    let statics = rewrite.sites.declare(&rt, episode);
    let site = quote! {
        struct __YieldprofAt;
        #statics
    };
    let episode = sites::episode();

    let body = if let Some(future) = boxed {
        quote! {
            #site
            ::std::boxed::Box::pin(#rt::instrument(#episode, #future))
        }
    } else if sig.asyncness.is_some() {
        // The episode spans the polls of the body's future. `return` and `?` in the
        // body now leave the `async move` block, whose output is the fn's output.
        let edge = return_edge(&sig.output);
        quote! {
            #site
            #rt::instrument(#episode, async move { #edge #(#stmts)* })
                .await
        }
    } else {
        let enter = quote!(#rt::enter_fn(#episode));
        let guard = local_spins(&rt, enter, rewrite.sites.spins());
        // The static first, in the body's own block: closures of the body name it too.
        quote! {
            #site
            #guard
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

/// The async block of a body that is only `Box::pin(async move { .. })`, taken out:
/// what `#[async_trait]` makes of an `async fn` before this attribute sees it.
fn take_boxed_future(block: &mut Block) -> Option<ExprAsync> {
    let [Stmt::Expr(Expr::Call(call), None)] = block.stmts.as_mut_slice() else {
        return None;
    };
    let Expr::Path(path) = &*call.func else {
        return None;
    };
    let mut names = path.path.segments.iter().rev().map(|s| &s.ident);
    let box_pin =
        matches!((names.next(), names.next()), (Some(f), Some(b)) if f == "pin" && b == "Box");
    if !box_pin || call.args.len() != 1 {
        return None;
    }
    match call.args.pop()?.into_value() {
        Expr::Async(future) => {
            block.stmts.clear();
            Some(future)
        }
        other => {
            call.args.push(other);
            None
        }
    }
}

/// The calling crate's name for yieldprof: `::yieldprof`, or the key it is renamed
/// to in that crate's Cargo.toml (`yp = { package = "yieldprof" }`). Read from the
/// manifest; where none names it (a re-export, a build outside cargo), `::yieldprof`
/// and `crate = ...` says otherwise.
fn default_crate() -> TokenStream {
    let name = crate_key();
    let name = Ident::new(&name, Span::call_site());
    quote!(::#name)
}

/// The key of [`default_crate`], found once per calling crate: every annotated fn of a
/// build asks, and reading the manifest each time was a few percent of a dev build.
/// Keyed by the crate's manifest directory, since one process (rust-analyzer's
/// proc-macro server) expands for many crates.
fn crate_key() -> String {
    type Found = Option<(Option<std::ffi::OsString>, String)>;
    static FOUND: Mutex<Found> = Mutex::new(None);
    let dir = std::env::var_os("CARGO_MANIFEST_DIR");
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    match &*found {
        Some((at, key)) if *at == dir => key.clone(),
        _ => {
            let key = find_crate_key();
            *found = Some((dir, key.clone()));
            key
        }
    }
}

fn find_crate_key() -> String {
    if names_yieldprof_plainly() {
        return "yieldprof".to_owned();
    }
    match proc_macro_crate::crate_name("yieldprof") {
        Ok(FoundCrate::Name(name)) => name,
        _ => "yieldprof".to_owned(),
    }
}

/// Whether the calling crate's manifest has a dependency keyed `yieldprof` and quotes
/// the name nowhere (no `package = "yieldprof"`): then it is `::yieldprof`, known
/// without `proc-macro-crate`, whose first call in a build runs `cargo locate-project`
/// and parses the manifests (a fifth of what 100 annotated fns added to a dev build).
/// Anything else, a workspace-inherited rename included, takes that full reading.
fn names_yieldprof_plainly() -> bool {
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return false;
    };
    let Ok(manifest) = std::fs::read_to_string(std::path::Path::new(&dir).join("Cargo.toml"))
    else {
        return false;
    };
    let keyed = manifest.lines().any(|line| {
        let line = line.trim_start();
        let key = line.strip_prefix("yieldprof").map(str::trim_start);
        matches!(key, Some(rest) if rest.starts_with('=') || rest.starts_with('.'))
            || line.starts_with('[') && line.contains("dependencies.yieldprof]")
    });
    keyed && !manifest.contains("\"yieldprof\"") && !manifest.contains("'yieldprof'")
}

/// A `return` the compiler sees but never runs, of the fn's declared type: it fixes
/// the async block's output type, so a body whose value has the wrong type is reported
/// at the user's tokens rather than at the attribute. Not possible for `impl Trait`,
/// which a `let` cannot name.
fn return_edge(output: &ReturnType) -> TokenStream {
    let ty = match output {
        ReturnType::Default => return quote!(),
        ReturnType::Type(_, ty) => ty,
    };
    if ty
        .to_token_stream()
        .into_iter()
        .any(|t| t.to_string() == "impl")
    {
        return quote!();
    }
    quote_spanned! {ty.span()=>
        #[allow(unreachable_code, clippy::diverging_sub_expression, clippy::empty_loop)]
        if false {
            let __yieldprof_return: #ty = loop {};
            return __yieldprof_return;
        }
    }
}

/// The episode's guard: `enter`, or, when the body has direct spins, their counters
/// (one per call site) holding it, so they are added to the episode's node as it
/// closes, in the same call.
fn local_spins(rt: &Runtime, enter: TokenStream, spins: bool) -> TokenStream {
    if !spins {
        let guard = Ident::new("__yieldprof_episode", Span::mixed_site());
        return quote!(let #guard = #enter;);
    }
    let (local, sites) = (spins_local(), sites::spin_sites());
    quote!(let #local = #rt::SpinCounts::new(#enter, #sites);)
}
