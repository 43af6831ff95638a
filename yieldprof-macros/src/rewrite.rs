//! Wraps the wait calls in an instrumented body with a per-call-site probe.

use crate::calls::{self, Held, Kind, Scope};
use crate::sites::{self, call_site, Runtime, SiteRef, Sites};
use proc_macro2::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream};
use quote::{quote, ToTokens, TokenStreamExt};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::visit_mut::{self, VisitMut};
use syn::{parse_quote, Block, Expr, ExprBlock, ExprCall, ExprMacro, Item, Pat, Stmt};

/// The visitor. `rt` is the path generated code names the runtime's hidden items by.
pub(crate) struct Rewrite<'a> {
    rt: &'a Runtime,
    /// Whether spins written directly in the body may be counted in the episode's
    /// local `SpinCounts` (not in an `async fn`, whose body is a future).
    local_spins: bool,
    /// Inside a closure or async block: code that may run outside the episode's
    /// stack frame (later, or on another thread).
    nested: bool,
    /// In async code (an `async fn` body, an async block or closure).
    in_async: bool,
    /// The `use` declarations and `Backoff` locals in scope.
    scope: Scope,
    /// Calls wrapped so far: a closure or async block in which it grew waits.
    wrapped: usize,
    /// The fn's sites, each wrapped call's by index.
    pub(crate) sites: Sites,
}

impl<'a> Rewrite<'a> {
    pub(crate) fn new(rt: &'a Runtime, is_async: bool) -> Self {
        Rewrite {
            rt,
            local_spins: !is_async,
            nested: false,
            in_async: is_async,
            scope: Scope::default(),
            wrapped: 0,
            sites: Sites::default(),
        }
    }
}

/// The local that holds an episode's direct spin counts.
pub(crate) fn spins_local() -> Ident {
    Ident::new("__yieldprof_spins", Span::mixed_site())
}

impl VisitMut for Rewrite<'_> {
    // A nested fn, impl or mod is a function of its own: it gets its own annotation
    // if it waits. Macro invocations are left alone (their tokens are not visited),
    // except crossbeam's `select!`, which is wrapped whole.
    fn visit_item_mut(&mut self, _: &mut Item) {}

    fn visit_block_mut(&mut self, block: &mut Block) {
        let mark = self.scope.mark();
        // Items are visible in their whole block, before and after the `use`.
        for stmt in &block.stmts {
            if let Stmt::Item(Item::Use(u)) = stmt {
                self.scope.add_use(&u.tree);
            }
        }
        let last = block.stmts.len().saturating_sub(1);
        // A local can hold a future only if a later statement awaits it: else a
        // `let g = m.lock();` is a blocking lock, timed as one.
        let awaited_later: Vec<bool> = (0..block.stmts.len())
            .map(|i| match &block.stmts[i] {
                Stmt::Local(l) if self.in_async => {
                    bound_name(&l.pat).is_some_and(|n| awaits(&block.stmts[i + 1..], n))
                }
                _ => false,
            })
            .collect();
        for (i, stmt) in block.stmts.iter_mut().enumerate() {
            match stmt {
                Stmt::Local(local) => {
                    let init = local.init.as_ref().map(|i| &*i.expr);
                    let held = self.scope.held_by(init, self.in_async && awaited_later[i]);
                    match (held, local.init.as_mut().map(|i| &mut *i.expr)) {
                        // Only a future is built here: its arguments may wait, the
                        // call does not (it is counted where it is awaited).
                        (Held::Future(_), Some(Expr::Call(call))) => {
                            visit_mut::visit_expr_call_mut(self, call)
                        }
                        (Held::Future(_), Some(Expr::MethodCall(call))) => {
                            visit_mut::visit_expr_method_call_mut(self, call)
                        }
                        _ => visit_mut::visit_local_mut(self, local),
                    }
                    if let Some(name) = bound_name(&local.pat) {
                        self.scope.bind(name, held);
                    }
                }
                Stmt::Macro(m) if self.scope.is_select(&m.mac.path, self.in_async) => {
                    // `select! {..}` as a statement: an expression statement now,
                    // with a `;` unless it is the block's value.
                    let semi = match (m.semi_token, i == last) {
                        (Some(s), _) => Some(s),
                        (None, true) => None,
                        (None, false) => Some(Default::default()),
                    };
                    let span = m.mac.path.span();
                    let mac = Expr::Macro(ExprMacro {
                        attrs: std::mem::take(&mut m.attrs),
                        mac: m.mac.clone(),
                    });
                    self.wrapped += 1;
                    *stmt = Stmt::Expr(self.timed("Channel", span, mac), semi);
                }
                _ => visit_mut::visit_stmt_mut(self, stmt),
            }
        }
        self.scope.reset(mark);
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Closure(c) => {
                let is_async = c.asyncness.is_some();
                let before = self.wrapped;
                self.nested_in(is_async, |v| visit_mut::visit_expr_closure_mut(v, c));
                // Its waits are the site's wherever it runs (another thread, later).
                // An async closure's body is a future: left to its own rules.
                if self.wrapped > before && !is_async {
                    let (rt, episode) = (self.rt, sites::episode());
                    let body = &c.body;
                    let guard = Ident::new("__yieldprof_nested", Span::mixed_site());
                    *c.body = parse_quote!({
                        let #guard = #rt::enter_nested(#episode);
                        #body
                    });
                }
            }
            Expr::Async(a) => {
                let before = self.wrapped;
                self.nested_in(true, |v| visit_mut::visit_expr_async_mut(v, a));
                if self.wrapped > before {
                    let (rt, episode) = (self.rt, sites::episode());
                    *expr = parse_quote!(#rt::nested(#episode, #a));
                }
            }
            Expr::Await(awaited) => self.awaited(awaited),
            Expr::Call(call) => {
                visit_mut::visit_expr_call_mut(self, call);
                if let Some(kind) = self.scope.call_kind(&call.func, false) {
                    self.wrapped += 1;
                    let span = first_span(call);
                    if let Some(form) = self.scope.asked_form(&call.func) {
                        // A `nanosleep` request is read only through `&req`: a raw
                        // pointer may not be valid to read.
                        let readable = |arg: &Expr| {
                            form != "asked_timespec"
                                || matches!(arg, Expr::Reference(r) if r.mutability.is_none())
                        };
                        if let Some(arg) = call.args.first_mut().filter(|a| readable(a)) {
                            let site = self.sites.asked(span);
                            *arg = asked(self.rt, form, site, take(arg));
                        }
                    }
                    let call = take(expr);
                    *expr = if kind == "Spin" && self.local_spins && !self.nested {
                        self.local_spin(span, call)
                    } else {
                        self.timed(kind, span, call)
                    };
                }
            }
            Expr::MethodCall(call) => {
                visit_mut::visit_expr_method_call_mut(self, call);
                if let Some(kind) = self.scope.method_kind(call, false) {
                    self.wrapped += 1;
                    // The line and column of the method's name, not of its receiver,
                    // which may start lines above.
                    let span = call.method.span();
                    *expr = self.timed(kind, span, take(expr));
                } else if calls::is_wake(call, self.in_async) && call.attrs.is_empty() {
                    let (rt, call) = (self.rt, take(expr));
                    *expr = Expr::Verbatim(quote!(#rt::woke(#rt::wake_start(), #call)));
                }
            }
            Expr::Macro(m) if self.scope.is_select(&m.mac.path, self.in_async) => {
                self.wrapped += 1;
                let span = m.mac.path.span();
                *expr = self.timed("Channel", span, take(expr));
            }
            _ => visit_mut::visit_expr_mut(self, expr),
        }
    }
}

impl Rewrite<'_> {
    /// Visits a closure or async block: code that may run outside the episode.
    fn nested_in(&mut self, is_async: bool, visit: impl FnOnce(&mut Self)) {
        let outer = (self.nested, self.in_async);
        self.nested = true;
        self.in_async = is_async;
        visit(self);
        (self.nested, self.in_async) = outer;
    }

    /// An awaited call only builds a future: a guard around it would time nothing,
    /// and the wait belongs to the task, not the thread. A recognised one is counted.
    fn awaited(&mut self, awaited: &mut syn::ExprAwait) {
        let kind = match &mut *awaited.base {
            // A future stored earlier (`let f = yield_now(); ... f.await`).
            base @ Expr::Path(_) => match self.scope.held(base) {
                Held::Future(kind) => Some(kind),
                _ => None,
            },
            Expr::Call(call) => {
                visit_mut::visit_expr_call_mut(self, call);
                self.scope.call_kind(&call.func, true)
            }
            Expr::MethodCall(call) => {
                visit_mut::visit_expr_method_call_mut(self, call);
                self.scope.method_kind(call, true)
            }
            _ => return visit_mut::visit_expr_await_mut(self, awaited),
        };
        if let Some(kind) = kind {
            self.wrapped += 1;
            let span = match &*awaited.base {
                Expr::MethodCall(call) => call.method.span(),
                base => base.span(),
            };
            let base = take(&mut awaited.base);
            *awaited.base = self.counted(kind, span, base);
        }
    }

    /// `{ spins.hit(i); <call> }`: the site is element `i` of the fn's direct spin
    /// sites.
    fn local_spin(&mut self, span: Span, call: Expr) -> Expr {
        let i = self.sites.spin(span);
        let spins = spins_local();
        let hit = Expr::Verbatim(quote!(#spins.hit(#i)));
        block(Stmt::Expr(hit, Some(Default::default())), call)
    }

    /// `{ count(&SITE); <base> }`, awaited as before.
    fn counted(&mut self, kind: Kind, span: Span, base: Expr) -> Expr {
        let rt = self.rt;
        let site = self.sites.call(kind, span, false);
        let count = Expr::Verbatim(quote!(#rt::count(#site)));
        block(Stmt::Expr(count, Some(Default::default())), base)
    }

    /// `timed_fn(call_fn(&SITE), <expr>)`, see [`wrap`].
    fn timed(&mut self, kind: Kind, span: Span, expr: Expr) -> Expr {
        let rt = self.rt;
        let site = self.sites.call(kind, span, self.in_async);
        wrap(rt, CallFn(rt, site), expr)
    }
}

/// Whether `stmts` await the local `name` (`name.await`), closures and async blocks
/// included.
fn awaits(stmts: &[Stmt], name: &Ident) -> bool {
    struct Finder<'a> {
        name: &'a Ident,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_expr_await(&mut self, e: &'ast syn::ExprAwait) {
            if let Expr::Path(p) = &*e.base {
                self.found |= p.path.is_ident(self.name);
            }
            visit::visit_expr_await(self, e);
        }
        fn visit_item(&mut self, _: &'ast Item) {}
    }
    let mut f = Finder { name, found: false };
    for s in stmts {
        f.visit_stmt(s);
    }
    f.found
}

/// The single name a `let` binds, if its pattern is one (`x`, `mut x`, `x: T`).
fn bound_name(pat: &Pat) -> Option<&Ident> {
    match pat {
        Pat::Ident(p) => Some(&p.ident),
        Pat::Type(t) => bound_name(&t.pat),
        _ => None,
    }
}

/// `timed_fn(<guard>, <expr>)`: the guard starts before `expr` is evaluated and stops
/// when `timed_fn` returns its value. A call, not a block, so the temporaries of `expr`
/// live as long as they did unwrapped (a block's tail would drop them at its end under
/// edition 2024). The expression's own attributes (`#[cfg(..)]` on its statement) move
/// to the wrapper, so a call compiled out takes its probe with it.
fn wrap(rt: &Runtime, guard: impl ToTokens, mut expr: Expr) -> Expr {
    let attrs = take_attrs(&mut expr);
    // Tokens as they are, never parsed again: most of what the macro costs a build is
    // syn's work in an unoptimised proc-macro.
    if attrs.is_empty() {
        return Expr::Verbatim(quote!(#rt::timed_fn(#guard, #expr)));
    }
    // With attributes, syn's printer knows to parenthesise a call where needed.
    let mut args = Punctuated::new();
    args.push(Expr::Verbatim(guard.into_token_stream()));
    args.push(expr);
    Expr::Call(ExprCall {
        attrs,
        func: Box::new(Expr::Verbatim(quote!(#rt::timed_fn))),
        paren_token: Default::default(),
        args,
    })
}

/// `timed_fn({ static SITE; call_fn(&SITE) }, <expr>)`, with a static of its own:
/// `yieldprof::wait!`, outside any annotated fn's sites.
pub(crate) fn timed(rt: &Runtime, kind: Kind, span: Span, expr: Expr) -> Expr {
    let site = call_site(rt, kind, span, false);
    let guard = quote! {
        {
            static __YIELDPROF_CALL: #rt::CallSite = #site;
            #rt::call_fn(&__YIELDPROF_CALL)
        }
    };
    wrap(rt, guard, expr)
}

/// `call_fn(&SITE)`, written as token trees into the wrapper's stream.
struct CallFn<'a>(&'a Runtime, SiteRef);

impl ToTokens for CallFn<'_> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.0.to_tokens(tokens);
        tokens.append(Punct::new(':', Spacing::Joint));
        tokens.append(Punct::new(':', Spacing::Alone));
        tokens.append(Ident::new("call_fn", Span::call_site()));
        tokens.append(Group::new(
            Delimiter::Parenthesis,
            self.1.into_token_stream(),
        ));
    }
}

/// `asked(&SITE, <arg>)`: the duration a sleep-like call asks for, recorded as the
/// argument passes through, evaluated once where it was written. The site has the
/// location of the call's own site, which the report matches it by.
fn asked(rt: &Runtime, form: &str, site: SiteRef, arg: Expr) -> Expr {
    let form = Ident::new(form, Span::call_site());
    Expr::Verbatim(quote!(#rt::#form(#site, #arg)))
}

/// Where the called function begins, as syn's `span()` gives it (on stable, its first
/// token's), without printing the whole call to find it: after the call's attributes
/// (`#[allow(deprecated)]` on the line above is not the call's line).
fn first_span(call: &ExprCall) -> Span {
    match &*call.func {
        Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => {
            match (&p.path.leading_colon, p.path.segments.first()) {
                (Some(colons), _) => colons.spans[0],
                (None, Some(first)) => first.ident.span(),
                (None, None) => call.func.span(),
            }
        }
        func => func.span(),
    }
}

/// `{ first; last }`, left to syn's printer so it adds parentheses where a block
/// would otherwise end a statement (`{..} + 1;`, `let .. = {..} else`).
fn block(first: Stmt, mut last: Expr) -> Expr {
    let attrs = take_attrs(&mut last);
    Expr::Block(ExprBlock {
        attrs,
        label: None,
        block: Block {
            brace_token: Default::default(),
            stmts: vec![first, Stmt::Expr(last, None)],
        },
    })
}

/// The attributes of a wrapped expression, which its wrapper takes over.
fn take_attrs(expr: &mut Expr) -> Vec<syn::Attribute> {
    match expr {
        Expr::Call(e) => std::mem::take(&mut e.attrs),
        Expr::MethodCall(e) => std::mem::take(&mut e.attrs),
        Expr::Macro(e) => std::mem::take(&mut e.attrs),
        _ => Vec::new(),
    }
}

fn take(expr: &mut Expr) -> Expr {
    std::mem::replace(expr, Expr::Verbatim(TokenStream::new()))
}
