//! `budget(key = value, ...)`: limits declared on the attribute, each one of the
//! runtime's `yieldprof::budget::Limit`s.

use crate::parse::{once, value};
use crate::sites::Runtime;
use proc_macro2::{Literal, TokenStream};
use quote::{quote, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Error, Expr, ExprLit, ExprUnary, Ident, Lit, Token, UnOp};

/// What a key declares. Calls are by `yieldprof::Kind` variant name.
#[derive(Clone, Copy)]
enum Shape {
    Episodes,
    Calls(&'static str),
    CallsPerEpisode(&'static str),
    WallShare,
}

/// Per kind of call, by `yieldprof::Kind` variant: the plural its keys are made of
/// (`max_locks`, `locks_per_episode`).
const CALL_KEYS: &[(&str, &str)] = &[
    ("Spin", "spins"),
    ("Yield", "yields"),
    ("Sleep", "sleeps"),
    ("Park", "parks"),
    ("AsyncYield", "async_yields"),
    ("Lock", "locks"),
    ("Condvar", "condvar_waits"),
    ("Channel", "channel_waits"),
    ("Join", "joins"),
    ("Barrier", "barrier_waits"),
    ("Backoff", "backoffs"),
];

/// Every key of `budget(...)`, in the order the docs and errors list them. Each is the
/// name the runtime's budget messages give the limit (`max_yields_per_episode = 16`).
fn keys() -> Vec<(String, Shape)> {
    let mut keys = vec![("max_episodes".to_string(), Shape::Episodes)];
    for &(kind, plural) in CALL_KEYS {
        keys.push((format!("max_{plural}"), Shape::Calls(kind)));
    }
    for &(kind, plural) in CALL_KEYS {
        keys.push((
            format!("max_{plural}_per_episode"),
            Shape::CallsPerEpisode(kind),
        ));
    }
    keys.push(("max_wall_share".to_string(), Shape::WallShare));
    keys
}

/// The key `name` stands for: itself, or for an old spelling (`yields_per_episode`, before
/// every limit took the `max_` of the messages and the `Budget` builder) its new one.
fn canonical(name: &str) -> String {
    let old = CALL_KEYS
        .iter()
        .any(|(_, plural)| name.strip_suffix("_per_episode") == Some(plural));
    match old {
        true => format!("max_{name}"),
        false => name.to_string(),
    }
}

/// One checked limit, ready to become a `yieldprof::budget::Limit`.
pub(crate) enum Limit {
    Episodes(u64),
    Calls(&'static str, u64),
    CallsPerEpisode(&'static str, f64),
    WallShare(f64),
}

impl Limit {
    /// The `Limit` expression, naming the runtime's hidden items by `p`.
    pub(crate) fn tokens(&self, p: &Runtime) -> TokenStream {
        let kind = |k: &str| {
            let k = Ident::new(k, proc_macro2::Span::call_site());
            quote!(#p::Kind::#k)
        };
        match *self {
            Limit::Episodes(n) => {
                let n = Literal::u64_suffixed(n);
                quote!(#p::Limit::Episodes(#n))
            }
            Limit::Calls(k, n) => {
                let (k, n) = (kind(k), Literal::u64_suffixed(n));
                quote!(#p::Limit::Calls(#k, #n))
            }
            Limit::CallsPerEpisode(k, x) => {
                let (k, x) = (kind(k), Literal::f64_suffixed(x));
                quote!(#p::Limit::CallsPerEpisode(#k, #x))
            }
            Limit::WallShare(x) => {
                let x = Literal::f64_suffixed(x);
                quote!(#p::Limit::WallShare(#x))
            }
        }
    }
}

/// `key = value` as written; checked by [`check`].
pub(crate) struct Entry {
    key: Ident,
    value: Expr,
}

impl Parse for Entry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        let usage = format!("{key} = number");
        let value = value(input, &key, &usage, |input| input.parse())?;
        Ok(Entry { key, value })
    }
}

/// The entries of `budget(...)` as written.
pub(crate) type Entries = Punctuated<Entry, Token![,]>;

/// Checks every entry; `errors` gets one per bad key or value, at its token.
pub(crate) fn check(entries: Entries, errors: &mut Vec<Error>) -> Vec<Limit> {
    let mut limits = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let keys = keys();
    for Entry { key, value } in entries {
        let name = canonical(&key.to_string());
        let Some(&(_, shape)) = keys.iter().find(|(k, _)| *k == name) else {
            let keys: Vec<String> = keys.iter().map(|(k, _)| format!("`{k}`")).collect();
            errors.push(Error::new_spanned(
                &key,
                format!(
                    "unknown budget limit `{key}`; expected one of {}",
                    keys.join(", ")
                ),
            ));
            continue;
        };
        if let Err(e) = once(&mut seen, &name, &key, "limit") {
            errors.push(e);
            continue;
        }
        match limit(&key, shape, &value) {
            Ok(l) => limits.push(l),
            Err(e) => errors.push(e),
        }
    }
    limits
}

fn limit(key: &Ident, shape: Shape, value: &Expr) -> syn::Result<Limit> {
    let lit = match value {
        Expr::Lit(ExprLit { lit, .. }) => lit,
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => {
            return Err(Error::new_spanned(
                value,
                format!("`{key}` must not be negative"),
            ))
        }
        _ => return Err(not_a_number(key, value)),
    };
    let number = |lit: &Lit| -> syn::Result<f64> {
        let x: f64 = match lit {
            Lit::Int(i) => i.base10_parse()?,
            Lit::Float(f) => f.base10_parse()?,
            _ => return Err(not_a_number(key, lit)),
        };
        match x.is_finite() {
            true => Ok(x),
            false => Err(Error::new_spanned(lit, "number too large")),
        }
    };
    let count = |lit: &Lit| -> syn::Result<u64> {
        match lit {
            Lit::Int(i) => i.base10_parse(),
            Lit::Float(_) => Err(Error::new_spanned(
                lit,
                format!("`{key}` is a count: expected a whole number"),
            )),
            _ => Err(not_a_number(key, lit)),
        }
    };
    Ok(match shape {
        Shape::Episodes => Limit::Episodes(count(lit)?),
        Shape::Calls(kind) => Limit::Calls(kind, count(lit)?),
        Shape::CallsPerEpisode(kind) => Limit::CallsPerEpisode(kind, number(lit)?),
        Shape::WallShare => match number(lit)? {
            x if (0.0..=1.0).contains(&x) => Limit::WallShare(x),
            _ => {
                return Err(Error::new_spanned(
                    lit,
                    format!("`{key}` is a share of wall time: expected a number from 0 to 1"),
                ))
            }
        },
    })
}

fn not_a_number(key: &Ident, value: &dyn ToTokens) -> Error {
    Error::new_spanned(value, format!("expected a number: `{key} = 16`"))
}
