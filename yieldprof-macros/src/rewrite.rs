//! Wraps the wait calls in an instrumented body with a per-call-site probe.

use crate::calls::{Held, Kind, Scope};
use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
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
    /// The spans of the spins counted locally, by index.
    pub(crate) spins: Vec<Span>,
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
            spins: Vec::new(),
        }
    }
}

/// The local that holds an episode's direct spin counts.
pub(crate) fn spins_local() -> Ident {
    Ident::new("__yieldprof_spins", Span::mixed_site())
}

/// `krate::__private`, as token trees. Interpolated many times per fn: a
/// `TokenStream` would cross the compiler's bridge at each (clone, flush, concatenate),
/// which in an unoptimised proc-macro was a large share of the macro's run.
pub(crate) struct Runtime(Vec<TokenTree>);

impl Runtime {
    pub(crate) fn new(krate: &TokenStream) -> Self {
        Runtime(quote!(#krate::__private).into_iter().collect())
    }
}

impl ToTokens for Runtime {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(self.0.iter().cloned());
    }
}

/// `::core::file!(), ::core::line!(), ::core::column!()` at `span`, the call's: the
/// three report where the user wrote it. Token trees, as [`Runtime`].
struct Location(Span);

impl ToTokens for Location {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let span = self.0;
        let punct = |c, spacing| {
            let mut p = Punct::new(c, spacing);
            p.set_span(span);
            TokenTree::Punct(p)
        };
        for (i, name) in ["file", "line", "column"].into_iter().enumerate() {
            if i > 0 {
                tokens.append(punct(',', Spacing::Alone));
            }
            tokens.append(punct(':', Spacing::Joint));
            tokens.append(punct(':', Spacing::Alone));
            tokens.append(Ident::new("core", span));
            tokens.append(punct(':', Spacing::Joint));
            tokens.append(punct(':', Spacing::Alone));
            tokens.append(Ident::new(name, span));
            tokens.append(punct('!', Spacing::Alone));
            let mut args = Group::new(Delimiter::Parenthesis, TokenStream::new());
            args.set_span(span);
            tokens.append(args);
        }
    }
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
                    *stmt = Stmt::Expr(timed(self.rt, "Channel", span, mac, self.in_async), semi);
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
                    let rt = self.rt;
                    let body = &c.body;
                    let guard = Ident::new("__yieldprof_nested", Span::mixed_site());
                    *c.body = parse_quote!({
                        let #guard = #rt::enter_nested(&__YIELDPROF_EPISODE);
                        #body
                    });
                }
            }
            Expr::Async(a) => {
                let before = self.wrapped;
                self.nested_in(true, |v| visit_mut::visit_expr_async_mut(v, a));
                if self.wrapped > before {
                    let rt = self.rt;
                    *expr = parse_quote!(
                        #rt::nested(&__YIELDPROF_EPISODE, #a)
                    );
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
                            *arg = asked(self.rt, form, span, take(arg));
                        }
                    }
                    let call = take(expr);
                    *expr = if kind == "Spin" && self.local_spins && !self.nested {
                        self.local_spin(span, call)
                    } else {
                        timed(self.rt, kind, span, call, self.in_async)
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
                    *expr = timed(self.rt, kind, span, take(expr), self.in_async);
                }
            }
            Expr::Macro(m) if self.scope.is_select(&m.mac.path, self.in_async) => {
                self.wrapped += 1;
                let span = m.mac.path.span();
                *expr = timed(self.rt, "Channel", span, take(expr), self.in_async);
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

    /// `{ spins.hit(i); <call> }`: the site is element `i` of the episode's static
    /// array, built from `self.spins` once the whole body is visited.
    fn local_spin(&mut self, span: Span, call: Expr) -> Expr {
        let i = Literal::usize_unsuffixed(self.spins.len());
        self.spins.push(span);
        let spins = spins_local();
        let hit = Expr::Verbatim(quote!(#spins.hit(#i)));
        block(Stmt::Expr(hit, Some(Default::default())), call)
    }

    /// `{ { static SITE; count(&SITE) } <base> }`, awaited as before.
    fn counted(&self, kind: Kind, span: Span, base: Expr) -> Expr {
        let rt = self.rt;
        let site = call_site(rt, kind, span, false);
        let count = Expr::Verbatim(quote! {
            {
                static __YIELDPROF_CALL: #rt::CallSite = #site;
                #rt::count(&__YIELDPROF_CALL)
            }
        });
        block(Stmt::Expr(count, None), base)
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

/// `timed_fn({ static SITE; call_fn(&SITE) }, <expr>)`: the guard starts before `expr` is
/// evaluated and stops when `timed` returns its value. A call, not a block, so the
/// temporaries of `expr` live as long as they did unwrapped (a block's tail would drop
/// them at its end under edition 2024). The expression's own attributes (`#[cfg(..)]`
/// on its statement) move to the wrapper, so a call compiled out takes its probe with
/// it.
pub(crate) fn timed(rt: &Runtime, kind: Kind, span: Span, mut expr: Expr, in_async: bool) -> Expr {
    let site = call_site(rt, kind, span, in_async);
    let attrs = take_attrs(&mut expr);
    // Tokens as they are, never parsed again: most of what the macro costs a build is
    // syn's work in an unoptimised proc-macro. One token stream per call: each one
    // interpolated into another crosses the compiler's bridge.
    let guard = quote! {
        {
            static __YIELDPROF_CALL: #rt::CallSite = #site;
            #rt::call_fn(&__YIELDPROF_CALL)
        }
    };
    if attrs.is_empty() {
        return Expr::Verbatim(quote!(#rt::timed_fn(#guard, #expr)));
    }
    // With attributes, syn's printer knows to parenthesise a call where needed.
    let mut args = Punctuated::new();
    args.push(Expr::Verbatim(guard));
    args.push(expr);
    Expr::Call(ExprCall {
        attrs,
        func: Box::new(Expr::Verbatim(quote!(#rt::timed_fn))),
        paren_token: Default::default(),
        args,
    })
}

/// `asked(&ASKED, <arg>)`: the duration a sleep-like call asks for, recorded as the
/// argument passes through, evaluated once where it was written. `ASKED` has the
/// location of the call's own site, which the report matches it by.
fn asked(rt: &Runtime, form: &str, span: Span, arg: Expr) -> Expr {
    let form = Ident::new(form, Span::call_site());
    let location = Location(span);
    Expr::Verbatim(quote! {
        #rt::#form(
            {
                static __YIELDPROF_ASKED: #rt::AskedSite = #rt::AskedSite::new(#location);
                &__YIELDPROF_ASKED
            },
            #arg,
        )
    })
}

/// `CallSite::new(kind, file!(), line!(), column!())` for the call at `span`, marked
/// `.in_async()` when it blocks a thread from async code. Only
/// `file!`/`line!`/`column!` carry the call's span, so they report where the user wrote
/// the call; the rest stays macro-generated code, which lints (e.g. clippy's
/// `blocks_in_conditions`) leave alone.
pub(crate) fn call_site(rt: &Runtime, kind: Kind, span: Span, in_async: bool) -> CallSite<'_> {
    CallSite {
        rt,
        kind,
        span,
        in_async,
    }
}

/// What [`call_site`] writes, as token trees into the stream it is interpolated in
/// (see [`Runtime`]).
pub(crate) struct CallSite<'a> {
    rt: &'a Runtime,
    kind: Kind,
    span: Span,
    in_async: bool,
}

impl ToTokens for CallSite<'_> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let (rt, location) = (self.rt, Location(self.span));
        let kind = Ident::new(self.kind, Span::call_site());
        rt.to_tokens(tokens);
        path_tail(tokens, &["CallSite", "new"]);
        let args = quote!(#rt::Kind::#kind, #location);
        tokens.append(Group::new(Delimiter::Parenthesis, args));
        if self.in_async {
            tokens.append(Punct::new('.', Spacing::Alone));
            tokens.append(Ident::new("in_async", Span::call_site()));
            tokens.append(Group::new(Delimiter::Parenthesis, TokenStream::new()));
        }
    }
}

/// `::a::b` after a path.
fn path_tail(tokens: &mut TokenStream, names: &[&str]) {
    for name in names {
        tokens.append(Punct::new(':', Spacing::Joint));
        tokens.append(Punct::new(':', Spacing::Alone));
        tokens.append(Ident::new(name, Span::call_site()));
    }
}

/// Where the call begins, as syn's `span()` gives it (on stable, its first token's),
/// without printing the whole call to find it.
fn first_span(call: &ExprCall) -> Span {
    match &*call.func {
        Expr::Path(p) if call.attrs.is_empty() && p.attrs.is_empty() && p.qself.is_none() => {
            match (&p.path.leading_colon, p.path.segments.first()) {
                (Some(colons), _) => colons.spans[0],
                (None, Some(first)) => first.ident.span(),
                (None, None) => call.span(),
            }
        }
        _ => call.span(),
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
