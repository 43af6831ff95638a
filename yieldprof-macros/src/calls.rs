//! Which calls in an annotated body are waits, and of which kind.
//!
//! A proc macro sees syntax, not types: `m.lock()` may be a `Mutex` or the user's own
//! method. So every rule below is a method name together with its number of
//! arguments, chosen where the pair is unambiguous in practice (`.read()` with no
//! argument is `RwLock::read`; `io::Read::read` takes a buffer), and never a guess from
//! a receiver's name. A rule that still matches something else miscounts that call as
//! a wait of the rule's kind; the call itself is kept as written, so the build never
//! breaks. The crate docs list the rules and the known look-alikes.

use syn::{Expr, ExprMethodCall, Ident, Path, UseTree};

/// A variant of the runtime's `Kind`.
pub(crate) type Kind = &'static str;

/// Free functions, by the path as written, after `use` declarations of the body are
/// followed (a leading `::` and generic arguments are ignored).
const PATHS: &[(&str, Kind)] = &[
    ("std::hint::spin_loop", "Spin"),
    ("core::hint::spin_loop", "Spin"),
    ("hint::spin_loop", "Spin"),
    ("spin_loop", "Spin"),
    // Deprecated since Rust 1.51, still in crates that keep an older minimum (`spin`).
    ("std::sync::atomic::spin_loop_hint", "Spin"),
    ("core::sync::atomic::spin_loop_hint", "Spin"),
    ("sync::atomic::spin_loop_hint", "Spin"),
    ("atomic::spin_loop_hint", "Spin"),
    ("spin_loop_hint", "Spin"),
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

/// Sleep-like functions whose first argument is a duration, and the runtime function
/// that records it: what the call asked for, beside what it took.
const ASKED: &[(&str, &str)] = &[
    ("std::thread::sleep", "asked"),
    ("thread::sleep", "asked"),
    ("std::thread::park_timeout", "asked"),
    ("thread::park_timeout", "asked"),
    ("libc::usleep", "asked_micros"),
    ("usleep", "asked_micros"),
    ("libc::nanosleep", "asked_timespec"),
    ("nanosleep", "asked_timespec"),
];

/// Functions counted when they are the base of `.await`.
const AWAITED_PATHS: &[(&str, Kind)] = &[
    ("tokio::task::yield_now", "AsyncYield"),
    ("task::yield_now", "AsyncYield"),
    ("yield_now", "AsyncYield"),
];

/// Method calls that block the thread, by name and number of arguments.
const METHODS: &[(&str, usize, Kind)] = &[
    // std and parking_lot `Mutex`/`RwLock`, `spin::Mutex`, tokio's blocking forms.
    ("lock", 0, "Lock"),
    ("read", 0, "Lock"),
    ("write", 0, "Lock"),
    ("upgradable_read", 0, "Lock"),
    ("blocking_lock", 0, "Lock"),
    ("blocking_read", 0, "Lock"),
    ("blocking_write", 0, "Lock"),
    // `Condvar` (std and parking_lot): the guard is an argument.
    ("wait", 1, "Condvar"),
    ("wait_timeout", 2, "Condvar"),
    ("wait_while", 2, "Condvar"),
    ("wait_timeout_while", 3, "Condvar"),
    ("wait_for", 2, "Condvar"),
    ("wait_until", 2, "Condvar"),
    // std mpsc, crossbeam-channel, tokio's blocking forms.
    ("recv", 0, "Channel"),
    ("recv_timeout", 1, "Channel"),
    ("recv_deadline", 1, "Channel"),
    ("send", 1, "Channel"),
    ("send_timeout", 2, "Channel"),
    ("blocking_recv", 0, "Channel"),
    ("blocking_send", 1, "Channel"),
    // `JoinHandle` and `ScopedJoinHandle`.
    ("join", 0, "Join"),
    // `Barrier`: no guard argument, unlike a condvar.
    ("wait", 0, "Barrier"),
    // `crossbeam_utils::Backoff`.
    ("snooze", 0, "Backoff"),
];

/// Method calls that wake a waiter, with no argument (`Condvar::notify_one` and
/// `notify_all`, `Thread::unpark`): not waits, but their time (a futex wake, on a VM
/// an interrupt to another CPU) is the handoff's, so they bound the stretches of
/// unmarked work around them (`record::gaps`).
const WAKES: &[&str] = &["notify_one", "notify_all", "unpark"];

/// Whether a method call outside async code wakes a waiter ([`WAKES`]).
pub(crate) fn is_wake(call: &ExprMethodCall, in_async: bool) -> bool {
    !in_async && call.args.is_empty() && WAKES.iter().any(|w| call.method == w)
}

/// Method calls counted when awaited (tokio and other async runtimes): the wait is the
/// task's, not the thread's, so it is counted, not timed.
const AWAITED_METHODS: &[(&str, usize, Kind)] = &[
    ("lock", 0, "Lock"),
    ("read", 0, "Lock"),
    ("write", 0, "Lock"),
    ("acquire", 0, "Lock"),
    ("notified", 0, "Condvar"),
    ("recv", 0, "Channel"),
    ("send", 1, "Channel"),
    ("changed", 0, "Channel"),
    ("wait", 0, "Barrier"),
];

/// `select!` of crossbeam-channel. Outside async code only: there a bare `select!` is
/// tokio's or futures', which polls futures instead of blocking.
const SELECT: &[&str] = &[
    "select",
    "crossbeam_channel::select",
    "crossbeam::select",
    "crossbeam::channel::select",
];

/// `Backoff::spin()` is only recognised on a local bound to one of these: `spin` is too
/// common a method name to take alone.
const BACKOFF_NEW: &[&str] = &["Backoff::new", "Backoff::default"];

/// What the body can see at a point: its `use` declarations and its `Backoff` locals,
/// innermost last. Blocks push on entry and truncate on exit.
#[derive(Default)]
pub(crate) struct Scope {
    /// Local name → the path it stands for.
    uses: Vec<(String, Vec<String>)>,
    /// `use a::b::*` prefixes.
    globs: Vec<Vec<String>>,
    /// Locals by name: what the latest binding holds.
    locals: Vec<(String, Held)>,
}

/// What a local holds, as far as the call that made it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    Other,
    /// `Backoff::new()`: its `.spin()` is a backoff.
    Backoff,
    /// In async code, the future of a known async wait (`let f = yield_now();`,
    /// `let g = m.lock();`), counted where it is awaited.
    Future(Kind),
}

/// Lengths to truncate a [`Scope`] back to when a block ends.
pub(crate) type Mark = (usize, usize, usize);

impl Scope {
    pub(crate) fn mark(&self) -> Mark {
        (self.uses.len(), self.globs.len(), self.locals.len())
    }

    pub(crate) fn reset(&mut self, (u, g, l): Mark) {
        self.uses.truncate(u);
        self.globs.truncate(g);
        self.locals.truncate(l);
    }

    /// Adds the names a `use` tree declares.
    pub(crate) fn add_use(&mut self, tree: &UseTree) {
        self.add_tree(Vec::new(), tree);
    }

    fn add_tree(&mut self, mut prefix: Vec<String>, tree: &UseTree) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.add_tree(prefix, &p.tree);
            }
            UseTree::Name(n) if n.ident == "self" => {
                if let Some(last) = prefix.last().cloned() {
                    self.uses.push((last, prefix));
                }
            }
            UseTree::Name(n) => {
                let name = n.ident.to_string();
                prefix.push(name.clone());
                self.uses.push((name, prefix));
            }
            UseTree::Rename(r) => {
                if r.ident != "self" {
                    prefix.push(r.ident.to_string());
                }
                self.uses.push((r.rename.to_string(), prefix));
            }
            UseTree::Glob(_) => self.globs.push(prefix),
            UseTree::Group(g) => {
                for t in &g.items {
                    self.add_tree(prefix.clone(), t);
                }
            }
        }
    }

    /// What `let name = init` binds, in async code or not.
    pub(crate) fn held_by(&self, init: Option<&Expr>, in_async: bool) -> Held {
        let future =
            |kind: Option<Kind>| kind.filter(|_| in_async).map_or(Held::Other, Held::Future);
        match init {
            Some(Expr::Call(call)) => {
                let paths = self.resolve_func(&call.func);
                if BACKOFF_NEW.iter().any(|p| matches(&paths, p)) {
                    Held::Backoff
                } else if in_async {
                    future(find(&paths, AWAITED_PATHS))
                } else {
                    Held::Other
                }
            }
            Some(Expr::MethodCall(call)) if in_async => future(self.method_kind(call, true)),
            _ => Held::Other,
        }
    }

    /// Records `let name = ...` binding `held`.
    pub(crate) fn bind(&mut self, name: &Ident, held: Held) {
        self.locals.push((name.to_string(), held));
    }

    /// What the local `expr` names holds; `Other` for anything but a local's name.
    pub(crate) fn held(&self, expr: &Expr) -> Held {
        let Expr::Path(p) = expr else {
            return Held::Other;
        };
        let Some(name) = p.path.get_ident() else {
            return Held::Other;
        };
        self.locals
            .iter()
            .rev()
            .find(|(n, _)| name == n)
            .map_or(Held::Other, |(_, held)| *held)
    }

    /// The paths `path` may stand for: its first segment followed through the `use`
    /// declarations in scope (a single name also through `use ...::*`), or as written.
    fn resolve(&self, path: &Path) -> Vec<Vec<String>> {
        let written: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let Some((first, rest)) = written.split_first() else {
            return Vec::new();
        };
        if let Some((_, full)) = self.uses.iter().rev().find(|(n, _)| n == first) {
            return vec![full.iter().chain(rest).cloned().collect()];
        }
        let mut out = vec![written.clone()];
        if rest.is_empty() {
            out.extend(self.globs.iter().map(|g| {
                let mut p = g.clone();
                p.push(first.clone());
                p
            }));
        }
        out
    }

    /// The paths `func` may stand for ([`Scope::resolve`]); none when it is not a path.
    /// Resolved once per call and matched against each table entry: the names are
    /// strings, each made across the compiler's bridge.
    fn resolve_func(&self, func: &Expr) -> Vec<Vec<String>> {
        match func {
            Expr::Path(p) if p.qself.is_none() => self.resolve(&p.path),
            _ => Vec::new(),
        }
    }

    /// The kind of a call of `func`, or of an awaited one.
    pub(crate) fn call_kind(&self, func: &Expr, awaited: bool) -> Option<Kind> {
        let table = if awaited { AWAITED_PATHS } else { PATHS };
        find(&self.resolve_func(func), table)
    }

    /// The runtime function that records the duration a sleep-like call asks for.
    pub(crate) fn asked_form(&self, func: &Expr) -> Option<&'static str> {
        find(&self.resolve_func(func), ASKED)
    }

    /// The kind of a method call, or of an awaited one.
    pub(crate) fn method_kind(&self, call: &ExprMethodCall, awaited: bool) -> Option<Kind> {
        let table = if awaited { AWAITED_METHODS } else { METHODS };
        let (name, args) = (call.method.to_string(), call.args.len());
        if let Some(&(_, _, kind)) = table.iter().find(|(m, n, _)| *m == name && *n == args) {
            return Some(kind);
        }
        (!awaited && name == "spin" && args == 0 && self.held(&call.receiver) == Held::Backoff)
            .then_some("Backoff")
    }

    /// Whether a macro invocation is crossbeam's blocking `select!`.
    pub(crate) fn is_select(&self, path: &Path, in_async: bool) -> bool {
        if in_async {
            return false;
        }
        let paths = self.resolve(path);
        SELECT.iter().any(|p| matches(&paths, p))
    }
}

/// The value of the first entry of `table` that one of `paths` matches.
fn find<T: Copy>(paths: &[Vec<String>], table: &[(&str, T)]) -> Option<T> {
    table
        .iter()
        .find(|(p, _)| matches(paths, p))
        .map(|&(_, v)| v)
}

/// Whether one of `paths` is `pattern` (`a::b::c`), or ends with it when `pattern`
/// names a type's function (`Backoff::new`).
fn matches(paths: &[Vec<String>], pattern: &str) -> bool {
    let want: Vec<&str> = pattern.split("::").collect();
    let by_suffix = want.len() == 2 && want[0].starts_with(char::is_uppercase);
    paths.iter().any(|p| {
        let tail = if by_suffix && p.len() >= 2 {
            &p[p.len() - 2..]
        } else {
            &p[..]
        };
        tail.len() == want.len() && tail.iter().zip(&want).all(|(a, b)| a == b)
    })
}

/// The kinds `yieldprof::wait!` takes, by the name written: the timed ones.
pub(crate) const WAIT_KINDS: &[(&str, Kind)] = &[
    ("lock", "Lock"),
    ("condvar", "Condvar"),
    ("channel", "Channel"),
    ("join", "Join"),
    ("barrier", "Barrier"),
    ("backoff", "Backoff"),
    ("sleep", "Sleep"),
    ("park", "Park"),
    ("yield", "Yield"),
];
