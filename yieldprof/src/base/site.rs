//! Static descriptions of wait sites, call sites and business frames, and the
//! process-wide table that gives each a small id the first time it is seen.

#[cfg(feature = "enabled")]
use crate::base::fork::{ForkMutex, Locked};
#[cfg(feature = "enabled")]
use crate::base::ids::Ids;
#[cfg(feature = "enabled")]
use crate::base::text::{host_name, last_segments};
#[cfg(feature = "enabled")]
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU32;
#[cfg(feature = "enabled")]
use std::sync::atomic::Ordering::Relaxed;

/// What a rewritten call does while it waits.
///
/// Spins are counted; every other kind but `AsyncYield` is timed, and its time is
/// drawn as the kind's own frame (`[lock]`, `[channel]`, ...) at the line of the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Kind {
    /// `spin_loop()`: a PAUSE instruction; the core stays busy.
    Spin,
    /// `yield_now()` / `sched_yield()`: a syscall that may hand the core to another thread.
    Yield,
    /// `sleep`, `usleep`, `nanosleep`: off the CPU for at least the timer slack.
    Sleep,
    /// `park`, `park_timeout`: off the CPU until unparked.
    Park,
    /// `tokio::task::yield_now().await`: counted, not timed (the time is the executor's).
    AsyncYield,
    /// Taking a lock: `Mutex::lock`, `RwLock::read`/`write` (std, parking_lot, spin),
    /// and an awaited `lock()`/`read()`/`write()` (counted).
    Lock,
    /// Waiting on a condition variable: `Condvar::wait`, `wait_timeout`, `wait_while`,
    /// and an awaited `Notify::notified()` (counted).
    Condvar,
    /// A channel receive or (possibly full) send: mpsc, crossbeam-channel, `select!`.
    Channel,
    /// Waiting for a thread to finish: `JoinHandle::join`, scoped joins.
    Join,
    /// Waiting at a `Barrier`.
    Barrier,
    /// `crossbeam_utils::Backoff::snooze`/`spin`: a spin, then a yield, on the CPU.
    Backoff,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 11] = [
        Kind::Spin,
        Kind::Yield,
        Kind::Sleep,
        Kind::Park,
        Kind::AsyncYield,
        Kind::Lock,
        Kind::Condvar,
        Kind::Channel,
        Kind::Join,
        Kind::Barrier,
        Kind::Backoff,
    ];

    /// The leaf frame used in folded stacks, e.g. `[spin]`.
    pub const fn frame(self) -> &'static str {
        match self {
            Kind::Spin => "[spin]",
            Kind::Yield => "[yield]",
            Kind::Sleep => "[sleep]",
            Kind::Park => "[park]",
            Kind::AsyncYield => "[async-yield]",
            Kind::Lock => "[lock]",
            Kind::Condvar => "[condvar]",
            Kind::Channel => "[channel]",
            Kind::Join => "[join]",
            Kind::Barrier => "[barrier]",
            Kind::Backoff => "[backoff]",
        }
    }

    /// Short lowercase name, e.g. `spin`: the name `yieldprof::wait!` takes.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Spin => "spin",
            Kind::Yield => "yield",
            Kind::Sleep => "sleep",
            Kind::Park => "park",
            Kind::AsyncYield => "async-yield",
            Kind::Lock => "lock",
            Kind::Condvar => "condvar",
            Kind::Channel => "channel",
            Kind::Join => "join",
            Kind::Barrier => "barrier",
            Kind::Backoff => "backoff",
        }
    }

    /// This kind's bit in a set of kinds (`1 << index`): there are fewer than 16.
    #[cfg(feature = "enabled")]
    pub(crate) const fn bit(self) -> u16 {
        1 << self as u16
    }

    /// The kinds whose bits are set in `set` (see [`Kind::bit`]), in report order.
    #[cfg(feature = "enabled")]
    pub(crate) fn in_set(set: u16) -> impl Iterator<Item = Kind> {
        Kind::ALL.into_iter().filter(move |k| set & k.bit() != 0)
    }

    /// Whether a call of this kind is timed (spins are only counted: a clock read
    /// would cost as much as the PAUSE itself).
    #[cfg(feature = "enabled")]
    pub(crate) const fn timed(self) -> bool {
        !matches!(self, Kind::Spin | Kind::AsyncYield)
    }
}

/// A function annotated with `#[instrument_wait]`: the first field of its static.
#[doc(hidden)]
#[derive(Debug)]
// Read only by the recording half; the macro builds it in both builds.
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
pub struct EpisodeSite {
    pub(crate) name: Option<&'static str>,
    pub(crate) module: &'static str,
    pub(crate) function: &'static str,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
    pub(crate) budget: &'static [Limit],
    /// Its number in this process, from 1 as sites are first counted (0 before): the
    /// slot of threads' per-site caches, so the first sites a thread meets share none.
    number: AtomicU32,
    /// The `type_name` of an item nested in the function: its full path, impl included.
    pub(crate) owner: Option<fn() -> &'static str>,
}

impl EpisodeSite {
    /// Called by the macro; `name` is the `name = "..."` argument.
    pub const fn new(
        name: Option<&'static str>,
        module: &'static str,
        function: &'static str,
        file: &'static str,
        line: u32,
    ) -> Self {
        EpisodeSite {
            name,
            module,
            function,
            file,
            line,
            budget: &[],
            number: AtomicU32::new(0),
            owner: None,
        }
    }

    /// `owner` names an item the macro nests in the function (`<R as H>::f::Item`): two
    /// methods of one name in one module's impls are told apart by it.
    pub const fn within(self, owner: fn() -> &'static str) -> Self {
        EpisodeSite {
            owner: Some(owner),
            ..self
        }
    }

    /// Its number in this process (see the field), given at its first use.
    #[cfg(feature = "enabled")]
    #[inline(always)]
    pub(crate) fn number(&self) -> u32 {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        match self.number.load(Relaxed) {
            0 => {
                let n = NEXT.fetch_add(1, Relaxed).max(1);
                let won = self.number.compare_exchange(0, n, Relaxed, Relaxed);
                won.map_or_else(|taken| taken, |_| n)
            }
            n => n,
        }
    }

    /// The limits of `budget(...)`, checked by
    /// [`Profile::check_declared`](crate::Profile::check_declared).
    pub const fn with_budget(self, budget: &'static [Limit]) -> Self {
        EpisodeSite { budget, ..self }
    }
}

/// A named business frame opened with [`frame!`](crate::frame).
#[doc(hidden)]
#[derive(Debug)]
// Read only by the recording half; the macro builds it in both builds.
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
pub struct WorkSite {
    pub(crate) name: &'static str,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
}

impl WorkSite {
    /// Called by `frame!`.
    pub const fn new(name: &'static str, file: &'static str, line: u32) -> Self {
        WorkSite { name, file, line }
    }
}

/// One rewritten wait call: a field of its function's static (`wait!`: its own).
#[doc(hidden)]
#[derive(Debug)]
// Read only by the recording half; the macro builds it in both builds.
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
pub struct CallSite {
    pub(crate) kind: Kind,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
    pub(crate) column: u32,
    pub(crate) in_async: bool,
    pub(crate) blocked: crate::base::blocked::Blocked,
}

impl CallSite {
    /// Called by the macro.
    pub const fn new(kind: Kind, file: &'static str, line: u32, column: u32) -> Self {
        CallSite {
            kind,
            file,
            line,
            column,
            in_async: false,
            blocked: crate::base::blocked::Blocked::NEW,
        }
    }

    /// Called by the macro for a call that blocks its thread from async code.
    pub const fn in_async(self) -> Self {
        CallSite {
            in_async: true,
            ..self
        }
    }
}

/// What a calling-context-tree node stands for.
#[cfg(feature = "enabled")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrameKind {
    /// A thread's root: its self time is `[work]`.
    Thread,
    /// A wait episode (`#[instrument_wait]`): its own time outside timed calls is
    /// `[spin]`, `[on-cpu]`, `[off-cpu]` or `[unexplained]` (see `Profile::folded`).
    Wait,
    /// A business frame (`frame!`): its self time is `[work]`.
    Work,
    /// Where entries go once a thread's node cap is reached.
    Overflow,
}

/// A frame as the report sees it.
#[cfg(feature = "enabled")]
#[derive(Clone, Debug, PartialEq)]
pub struct FrameInfo {
    /// `FrameKind::Wait` frames are wait sites.
    pub kind: FrameKind,
    /// The frame name: `name = "..."`, else `module::function`.
    pub name: String,
    /// The full path, `crate::module::function` (for `frame!`, the name).
    pub path: String,
    /// Source file of the annotated function or `frame!`.
    pub file: &'static str,
    /// Its line.
    pub line: u32,
    /// The limits declared with `#[instrument_wait(budget(...))]`; empty when none.
    pub budget: &'static [Limit],
    /// A wait site's impl-qualified name, which replaces `name` once another
    /// function's site shares its default name; `None` for a given name.
    pub(crate) qualified: Option<String>,
}

/// A call site as the report sees it.
#[cfg(feature = "enabled")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallInfo {
    /// What the call does.
    pub kind: Kind,
    /// Source file.
    pub file: &'static str,
    /// Line of the call.
    pub line: u32,
    /// Column of the call.
    pub column: u32,
    /// Made without `.await` in async code (an `async fn` or block): a blocking call
    /// that holds the executor's thread.
    pub in_async: bool,
}

/// Ids for frames and call sites, keyed by the address of their static (or of the
/// `Location` for the public wrappers). Only node and slot creation touch it, and its
/// lock once per site: later look-ups read `FRAME_IDS` and `CALL_IDS`.
#[cfg(feature = "enabled")]
struct Table {
    frames: Vec<FrameInfo>,
    calls: Vec<CallInfo>,
    frame_ids: BTreeMap<usize, u32>,
    call_ids: BTreeMap<usize, u32>,
}

#[cfg(feature = "enabled")]
impl Table {
    /// Default names stay `module::function` until a second function of that name records
    /// (another impl's method, a free fn): then every site of that name takes its impl-qualified
    /// name (`module::<Recv as Handle>::f`), never read as one site's. Given names are shared.
    fn qualify(&mut self, id: u32) {
        // `module::…::function` read back as `module::function`, renamed or not.
        let short = |f: &FrameInfo| {
            let q = f.qualified.as_deref()?;
            let module = q.split("::").next()?;
            let function = q.rsplit("::").next()?;
            Some(format!("{module}::{function}"))
        };
        let new = &self.frames[id as usize];
        let Some(name) = short(new) else { return };
        let shared: Vec<usize> = (0..self.frames.len())
            .filter(|&f| short(&self.frames[f]).as_ref() == Some(&name))
            .collect();
        if shared.iter().any(|&f| self.frames[f].path != new.path) {
            for f in shared {
                let frame = &mut self.frames[f];
                frame.name = frame.qualified.clone().unwrap_or_default();
            }
        }
    }

    /// Ids 0 and 1 are fixed so thread setup never looks them up.
    fn fill_fixed(&mut self) {
        self.frames.push(FrameInfo {
            kind: FrameKind::Thread,
            name: String::new(),
            path: String::new(),
            file: "",
            line: 0,
            budget: &[],
            qualified: None,
        });
        self.frames.push(FrameInfo {
            kind: FrameKind::Overflow,
            name: "[overflow]".into(),
            path: "[overflow]".into(),
            file: "",
            line: 0,
            budget: &[],
            qualified: None,
        });
        self.calls.push(CallInfo {
            kind: Kind::Spin,
            file: "[overflow]",
            line: 0,
            column: 0,
            in_async: false,
        });
    }
}

#[cfg(feature = "enabled")]
fn lock() -> Locked<Table> {
    // Built in place, not in a `OnceLock`: a fork in its first use would hang the child.
    static TABLE: ForkMutex<Table> = ForkMutex::new(
        Table {
            frames: Vec::new(),
            calls: Vec::new(),
            frame_ids: BTreeMap::new(),
            call_ids: BTreeMap::new(),
        },
        |_| (),
    );
    let mut t = TABLE.lock();
    if t.frames.is_empty() {
        t.fill_fixed();
    }
    t
}

/// The ids given so far, read without the table's lock (`base/ids.rs`).
#[cfg(feature = "enabled")]
static FRAME_IDS: Ids = Ids::new();
#[cfg(feature = "enabled")]
static CALL_IDS: Ids = Ids::new();

#[cfg(feature = "enabled")]
pub(crate) const THREAD_FRAME: u32 = 0;
#[cfg(feature = "enabled")]
pub(crate) const OVERFLOW_FRAME: u32 = 1;
#[cfg(feature = "enabled")]
pub(crate) const OVERFLOW_CALL: u32 = 0;

/// Frame id for the static at `key`, creating it with `info` the first time.
#[cfg(feature = "enabled")]
pub(crate) fn frame_id(key: usize, info: impl FnOnce() -> FrameInfo) -> u32 {
    if let Some(id) = FRAME_IDS.get(key) {
        return id;
    }
    let mut t = lock();
    if let Some(&id) = t.frame_ids.get(&key) {
        return id;
    }
    let id = t.frames.len() as u32;
    t.frames.push(info());
    t.frame_ids.insert(key, id);
    t.qualify(id);
    FRAME_IDS.put(key, id);
    id
}

/// Call id for the static (or `Location`) at `key`.
#[cfg(feature = "enabled")]
pub(crate) fn call_id(key: usize, info: impl FnOnce() -> CallInfo) -> u32 {
    if let Some(id) = CALL_IDS.get(key) {
        return id;
    }
    let mut t = lock();
    if let Some(&id) = t.call_ids.get(&key) {
        return id;
    }
    let id = t.calls.len() as u32;
    t.calls.push(info());
    t.call_ids.insert(key, id);
    CALL_IDS.put(key, id);
    id
}

/// A copy of the tables, for a report.
#[cfg(feature = "enabled")]
pub(crate) fn tables() -> (Vec<FrameInfo>, Vec<CallInfo>) {
    let t = lock();
    (t.frames.clone(), t.calls.clone())
}

#[cfg(feature = "enabled")]
impl EpisodeSite {
    pub(crate) fn info(&self) -> FrameInfo {
        let name = self.name.and_then(host_name).unwrap_or_else(|| {
            // `module_path!()` starts with the crate name; keep the module's last
            // segment so frames read `module::fn` and stay short in the graph.
            let module = self.module.rsplit("::").next().unwrap_or(self.module);
            format!("{module}::{}", self.function)
        });
        FrameInfo {
            kind: FrameKind::Wait,
            name,
            path: self
                .owner_path()
                .unwrap_or_else(|| format!("{}::{}", self.module, self.function)),
            file: self.file,
            line: self.line,
            budget: self.budget,
            qualified: self.qualified(),
        }
    }
}

#[cfg(feature = "enabled")]
impl EpisodeSite {
    /// `crate::module::Type::function` or `<crate::module::T as crate::module::Tr>::function`,
    /// read off the nested item's `type_name`; `None` for a site built without one.
    fn owner_path(&self) -> Option<String> {
        let mut path = (self.owner?)().strip_suffix("::__YieldprofAt")?;
        // An `async fn`'s body is a closure of the fn: `f::{{closure}}::__YieldprofAt`.
        while let Some(fn_path) = path.strip_suffix("::{{closure}}") {
            path = fn_path;
        }
        // Anything else (a name `type_name` spells otherwise) keeps `module::function`.
        let head = path.strip_suffix(self.function)?;
        head.ends_with("::").then(|| path.to_string())
    }

    /// The impl-qualified name, for a site with no given name: the module's last
    /// segment, then the path past the module with every inner path cut to its last
    /// segment (`chan::<Recv as Handle>::try_select`, `chan::Ring<_>::push`).
    fn qualified(&self) -> Option<String> {
        if self.name.is_some() {
            return None;
        }
        let module = self.module.rsplit("::").next().unwrap_or(self.module);
        let path = self.owner_path()?;
        let within = path
            .strip_prefix(self.module)
            .and_then(|p| p.strip_prefix("::"))
            .unwrap_or(&path);
        Some(format!("{module}::{}", last_segments(within)))
    }
}

#[cfg(feature = "enabled")]
impl WorkSite {
    pub(crate) fn info(&self) -> FrameInfo {
        // A blank name (`frame!("")`, a nameless span) goes by where it was opened.
        let name = host_name(self.name).unwrap_or_else(|| format!("{}:{}", self.file, self.line));
        FrameInfo {
            kind: FrameKind::Work,
            path: name.clone(),
            name,
            file: self.file,
            line: self.line,
            budget: &[],
            qualified: None,
        }
    }
}

#[cfg(feature = "enabled")]
impl CallSite {
    pub(crate) fn info(&self) -> CallInfo {
        CallInfo {
            kind: self.kind,
            file: self.file,
            line: self.line,
            column: self.column,
            in_async: self.in_async,
        }
    }
}

/// One limit. Counts are totals over the report; "per episode" figures divide by the
/// site's episodes.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Limit {
    /// At most this many episodes.
    Episodes(u64),
    /// At most this many calls of a kind, in total.
    Calls(Kind, u64),
    /// At most this many calls of a kind per episode, on average.
    CallsPerEpisode(Kind, f64),
    /// At most this share (0..=1) of the wall time of the threads it ran on.
    WallShare(f64),
    /// Thread only: at most this share (0..=1) of its wall time waiting.
    WaitShare(f64),
    /// At most this many voluntary context switches per episode (getrusage).
    VoluntarySwitchesPerEpisode(f64),
    /// At most this many involuntary context switches per episode (getrusage).
    InvoluntarySwitchesPerEpisode(f64),
    /// Thread only: at most this many involuntary context switches in all.
    InvoluntarySwitches(u64),
    /// At most this many hardware cache misses per episode (needs a PMU).
    CacheMissesPerEpisode(f64),
    /// No watched cache line may be FALSE, MIXED or ADJACENT-RISK.
    NoFalseSharing,
    /// A `yieldprof::sync` acquisition site: its longest sampled hold, ns.
    MaxHoldNs(u64),
    /// No cycle in the `yieldprof::sync` lock-order graph.
    NoLockOrderCycle,
}

/// Whether `query` names the site called `name` with full path `path`: the name, the
/// path, or a tail of the path that starts at a `::`.
#[cfg(feature = "enabled")]
pub(crate) fn names_site(name: &str, path: &str, query: &str) -> bool {
    name == query
        || path == query
        || path
            .strip_suffix(query)
            .is_some_and(|head| head.ends_with("::"))
}

#[cfg(all(test, feature = "enabled"))]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A thread's first slot of a call site another thread recorded takes no lock.
    /// Ground truth: the table's lock held here while another thread looks the id up.
    #[test]
    fn an_id_given_before_is_found_while_the_table_is_locked() {
        static SITE: CallSite = CallSite::new(Kind::Yield, file!(), line!(), 1);
        let key = &SITE as *const CallSite as usize;
        let id = call_id(key, || SITE.info());
        let held = lock();
        let (tx, rx) = std::sync::mpsc::channel();
        let looker = std::thread::spawn(move || tx.send(call_id(key, || SITE.info())));
        let found = rx.recv_timeout(Duration::from_secs(10));
        drop(held);
        looker.join().unwrap().ok();
        assert_eq!(found, Ok(id), "the look-up waited for the lock");
    }
}
