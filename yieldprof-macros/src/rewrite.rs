//! Wraps the wait calls in an instrumented body with a per-call-site probe.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{parse_quote, Block, Expr, ExprBlock, Item, Stmt};

/// Calls that are wrapped with a counting or timing guard, by the path as written
/// (a leading `::` and generic arguments are ignored).
const CALLS: &[(&str, &str)] = &[
    ("std::hint::spin_loop", "Spin"),
    ("core::hint::spin_loop", "Spin"),
    ("hint::spin_loop", "Spin"),
    ("spin_loop", "Spin"),
    ("std::thread::yield_now", "Yield"),
    ("thread::yield_now", "Yield"),
    ("libc::sched_yield", "Yield"),
    ("sched_yield", "Yield"),
    ("yield_now", "Yield"),
    ("std::thread::sleep", "Sleep"),
    ("thread::sleep", "Sleep"),
    ("libc::usleep", "Sleep"),
    ("libc::nanosleep", "Sleep"),
    ("usleep", "Sleep"),
    ("nanosleep", "Sleep"),
    ("std::thread::park", "Park"),
    ("thread::park", "Park"),
    ("std::thread::park_timeout", "Park"),
    ("thread::park_timeout", "Park"),
];

/// Calls that are counted when they are the base of `.await`.
const AWAITED: &[&str] = &["tokio::task::yield_now", "task::yield_now", "yield_now"];

/// The visitor. `krate` is the path generated code names the runtime by.
pub(crate) struct Rewrite<'a> {
    krate: &'a TokenStream,
    /// Whether spins written directly in the body may be counted in the episode's
    /// local `SpinCounts` (not in an `async fn`, whose body is a future).
    local_spins: bool,
    /// Inside a closure or async block: code that may run outside the episode's
    /// stack frame (later, or on another thread).
    nested: bool,
    /// The spans of the spins counted locally, by index.
    pub(crate) spins: Vec<Span>,
}

impl<'a> Rewrite<'a> {
    pub(crate) fn new(krate: &'a TokenStream, local_spins: bool) -> Self {
        Rewrite {
            krate,
            local_spins,
            nested: false,
            spins: Vec::new(),
        }
    }
}

/// The local that holds an episode's direct spin counts.
pub(crate) fn spins_local() -> Ident {
    Ident::new("__yieldprof_spins", Span::mixed_site())
}

impl VisitMut for Rewrite<'_> {
    // A nested fn, impl or mod is a function of its own: it gets its own annotation
    // if it waits. Macro invocations need no override: their tokens are not visited.
    fn visit_item_mut(&mut self, _: &mut Item) {}

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Closure(_) | Expr::Async(_) => {
                let outer = std::mem::replace(&mut self.nested, true);
                visit_mut::visit_expr_mut(self, expr);
                self.nested = outer;
            }
            Expr::Await(awaited) => {
                let Expr::Call(call) = &mut *awaited.base else {
                    return visit_mut::visit_expr_await_mut(self, awaited);
                };
                // An awaited call only builds a future: a guard around it would time
                // nothing, so it is counted (async yields) or left alone.
                visit_mut::visit_expr_call_mut(self, call);
                if AWAITED.iter().any(|p| path_is(&call.func, p)) {
                    let base = take(&mut awaited.base);
                    *awaited.base = self.counted(base);
                }
            }
            Expr::Call(call) => {
                visit_mut::visit_expr_call_mut(self, call);
                if let Some(&(_, kind)) = CALLS.iter().find(|(p, _)| path_is(&call.func, p)) {
                    let call = take(expr);
                    *expr = if kind == "Spin" && self.local_spins && !self.nested {
                        self.local_spin(call)
                    } else {
                        self.timed(kind, call)
                    };
                }
            }
            _ => visit_mut::visit_expr_mut(self, expr),
        }
    }
}

impl Rewrite<'_> {
    /// `{ let guard = { static SITE; call(&SITE) }; <call> }`: the guard drops after
    /// the call, and the call stays the block's value.
    fn timed(&self, kind: &str, call: Expr) -> Expr {
        let krate = self.krate;
        let site = self.site(kind, call.span());
        let guard = Ident::new("__yieldprof_call", Span::mixed_site());
        let open: Stmt = parse_quote! {
            let #guard = { #site #krate::__private::call(&__YIELDPROF_CALL) };
        };
        block(open, call)
    }

    /// `{ spins.hit(i); <call> }`: the site is element `i` of the episode's static
    /// array, built from `self.spins` once the whole body is visited.
    fn local_spin(&mut self, call: Expr) -> Expr {
        let i = Literal::usize_unsuffixed(self.spins.len());
        self.spins.push(call.span());
        let spins = spins_local();
        block(parse_quote!(#spins.hit(#i);), call)
    }

    /// `{ { static SITE; count(&SITE) } <base> }`, awaited as before.
    fn counted(&self, base: Expr) -> Expr {
        let krate = self.krate;
        let site = self.site("AsyncYield", base.span());
        let count: Stmt = parse_quote! {
            { #site #krate::__private::count(&__YIELDPROF_CALL) }
        };
        block(count, base)
    }

    /// The call site's static.
    fn site(&self, kind: &str, span: Span) -> TokenStream {
        let krate = self.krate;
        let site = call_site(krate, kind, span);
        quote! {
            static __YIELDPROF_CALL: #krate::__private::CallSite = #site;
        }
    }
}

/// `CallSite::new(kind, file!(), line!(), column!())` for the call at `span`. Only
/// `file!`/`line!`/`column!` carry the call's span, so they report where the user wrote
/// the call; the rest stays macro-generated code, which lints (e.g. clippy's
/// `blocks_in_conditions`) leave alone.
pub(crate) fn call_site(krate: &TokenStream, kind: &str, span: Span) -> TokenStream {
    let kind = Ident::new(kind, Span::call_site());
    let location = quote_spanned!(span=> ::core::file!(), ::core::line!(), ::core::column!());
    quote!(#krate::__private::CallSite::new(#krate::__private::Kind::#kind, #location))
}

/// `{ first; last }`, left to syn's printer so it adds parentheses where a block
/// would otherwise end a statement (`{..} + 1;`, `let .. = {..} else`).
fn block(first: Stmt, mut last: Expr) -> Expr {
    // The call's own attributes (`#[cfg(..)]` on its statement) move to the block, so
    // a call compiled out takes its probe with it.
    let attrs = match &mut last {
        Expr::Call(call) => std::mem::take(&mut call.attrs),
        _ => Vec::new(),
    };
    Expr::Block(ExprBlock {
        attrs,
        label: None,
        block: Block {
            brace_token: Default::default(),
            stmts: vec![first, Stmt::Expr(last, None)],
        },
    })
}

fn take(expr: &mut Expr) -> Expr {
    std::mem::replace(expr, Expr::Verbatim(TokenStream::new()))
}

/// Whether `func` is the path `pattern` (`a::b::c`) as written.
fn path_is(func: &Expr, pattern: &str) -> bool {
    let Expr::Path(func) = func else {
        return false;
    };
    func.qself.is_none()
        && func.path.segments.len() == pattern.split("::").count()
        && func
            .path
            .segments
            .iter()
            .zip(pattern.split("::"))
            .all(|(seg, want)| seg.ident == want)
}
