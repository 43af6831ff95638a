//! The tokens of the statics an annotated fn gets: the runtime's path, a call's
//! location, and the fn's one static of sites.
//!
//! Written as token trees into the stream they are interpolated in: each token stream
//! interpolated into another crosses the compiler's bridge (clone, flush, concatenate),
//! which in an unoptimised proc-macro was a large share of the macro's run.

use crate::calls::Kind;
use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens, TokenStreamExt};

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

/// `::std::file!(), ::std::line!(), ::std::column!()` at `span`, the call's: the
/// three report where the user wrote it. Token trees, as [`Runtime`].
pub(crate) struct Location(pub(crate) Span);

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
            tokens.append(Ident::new("std", span));
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

/// The sites of one annotated fn, fields of its one static, `__YIELDPROF_SITES`: its
/// episode, its direct spins (an array, for `SpinCounts`), then one field per wrapped
/// call or sleep request, in the order they were met. One static per fn: one per call
/// was one more body for the compiler to type-check, borrow-check and evaluate at each
/// call (docs/cost.md, "Compile time"). Fields, not arrays, so that naming one is no
/// index to check.
#[derive(Default)]
pub(crate) struct Sites {
    spins: Vec<Span>,
    fields: Vec<Field>,
}

enum Field {
    Call(Kind, Span, bool),
    Asked(Span),
}

impl Sites {
    /// `&SITES.n`, a new call site.
    pub(crate) fn call(&mut self, kind: Kind, span: Span, in_async: bool) -> SiteRef {
        self.add(Field::Call(kind, span, in_async))
    }

    /// `&SITES.n`, a new sleep request's site.
    pub(crate) fn asked(&mut self, span: Span) -> SiteRef {
        self.add(Field::Asked(span))
    }

    fn add(&mut self, field: Field) -> SiteRef {
        self.fields.push(field);
        SiteRef(self.fields.len() + 1)
    }

    /// The index of a new direct spin site in `SITES.1`.
    pub(crate) fn spin(&mut self, span: Span) -> Literal {
        self.spins.push(span);
        Literal::usize_unsuffixed(self.spins.len() - 1)
    }

    /// Whether the body has direct spins.
    pub(crate) fn spins(&self) -> bool {
        !self.spins.is_empty()
    }

    /// The static, with `episode` (an `EpisodeSite` expression) first.
    pub(crate) fn declare(&self, rt: &Runtime, episode: TokenStream) -> TokenStream {
        let n = self.spins.len();
        let spins = self.spins.iter().map(|&s| call_site(rt, "Spin", s, false));
        let types = self.fields.iter().map(|f| FieldType(rt, f));
        let values = self.fields.iter().map(|f| FieldValue(rt, f));
        quote! {
            static __YIELDPROF_SITES: (#rt::EpisodeSite, [#rt::CallSite; #n], #(#types,)*) =
                (#episode, [#(#spins),*], #(#values,)*);
        }
    }
}

/// A field's type in the static.
struct FieldType<'a>(&'a Runtime, &'a Field);

impl ToTokens for FieldType<'_> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.0.to_tokens(tokens);
        match self.1 {
            Field::Call(..) => path_tail(tokens, &["CallSite"]),
            Field::Asked(_) => path_tail(tokens, &["AskedSite"]),
        }
    }
}

/// A field's value in the static.
struct FieldValue<'a>(&'a Runtime, &'a Field);

impl ToTokens for FieldValue<'_> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match *self.1 {
            Field::Call(kind, span, in_async) => {
                call_site(self.0, kind, span, in_async).to_tokens(tokens)
            }
            Field::Asked(span) => {
                self.0.to_tokens(tokens);
                path_tail(tokens, &["AskedSite", "new"]);
                let location = Location(span).into_token_stream();
                tokens.append(Group::new(Delimiter::Parenthesis, location));
            }
        }
    }
}

/// `&__YIELDPROF_SITES.n`: field `n` of the fn's static, written as token trees.
#[derive(Clone, Copy)]
pub(crate) struct SiteRef(usize);

impl ToTokens for SiteRef {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.append(Punct::new('&', Spacing::Alone));
        tokens.append(Ident::new("__YIELDPROF_SITES", Span::call_site()));
        tokens.append(Punct::new('.', Spacing::Alone));
        tokens.append(Literal::usize_unsuffixed(self.0));
    }
}

/// `&__YIELDPROF_SITES.0`, the fn's episode site.
pub(crate) fn episode() -> SiteRef {
    SiteRef(0)
}

/// `&__YIELDPROF_SITES.1`, the direct spin sites.
pub(crate) fn spin_sites() -> SiteRef {
    SiteRef(1)
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
