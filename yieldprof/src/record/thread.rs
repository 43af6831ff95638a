//! Per-thread recording state and the registry that keeps it after the thread exits.
//!
//! Each thread owns a calling-context tree (CCT) of frames. Only the owner writes it,
//! with relaxed load+store pairs on atomics (no read-modify-write, no lock); a report
//! reads the same atomics from another thread while the owner runs on.

use crate::base::arena::{bump, Arena, Link};
use crate::base::clock;
use crate::base::fork::{ForkMutex, Locked};
use crate::base::reentry::{self, Inside};
use crate::base::ring::Ring;
use crate::base::site::{self, OVERFLOW_CALL, OVERFLOW_FRAME, THREAD_FRAME};
use crate::base::text::host_name;
use crate::counters::{self, LocalCounters, NodeCounts, ThreadCounters};
use crate::model::histogram::{AtomicDurations, AtomicHistogram};
use crate::model::profile::Profile;
use crate::model::tree::ThreadProfile;
use crate::record::closing::Closing;
use crate::record::exited::Exited;
use crate::record::open::{self, Claimed, OpenFrames, Tally, Unread, UnwaitedTable, SERIAL};
use crate::record::records::Records;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Index of a thread's root node; also "no node" in child and sibling links, since
/// the root is never anyone's child.
pub(crate) const ROOT: u32 = 0;
/// Index of the node that takes every entry past the cap.
pub(crate) const OVERFLOW: u32 = 1;
/// Slot 0 takes every call past the slot cap; also "no slot" in slot links.
pub(super) const OVERFLOW_SLOT: u32 = 0;

/// Durations here are clock ticks (see `clock`); reports convert them to ns.
#[derive(Default)]
pub(crate) struct Node {
    pub(super) key: AtomicUsize,
    pub(super) frame: AtomicU32,
    pub(super) parent: AtomicU32,
    pub(super) first_child: Link,
    pub(super) next_sibling: Link,
    pub(super) first_slot: Link,
    /// Frames open on this node now (owner only): more than one when frames held
    /// across `.await` interleave on the thread.
    pub(super) open: AtomicU32,
    /// The tick the first of the frames open on it now opened (0: none), and the
    /// thread's off-CPU clock at its switch mark (`Mark::off_clock`), ns (0: none): a
    /// report counts an open episode up to it, its off-CPU part too (`record::copy`).
    pub(super) open_since: AtomicU64,
    pub(super) open_off: AtomicU64,
    pub(crate) episodes: AtomicU64,
    pub(crate) wall_ns: AtomicU64,
    /// Async episodes only: time between their polls (first poll to completion, minus
    /// the polls), which `wall_ns` leaves out.
    pub(crate) suspended_ns: AtomicU64,
    /// Ticks yieldprof spent in its own slow paths while this node was current
    /// (`[profiler]`: see `Local::charge`), inside its wall time.
    pub(crate) profiler_ticks: AtomicU64,
    /// Ticks of its own time in stretches between waits long enough to be work
    /// (`record::gaps`).
    pub(crate) gap_ticks: AtomicU64,
    /// The same, of stretches the thread was switched in (or not known not to be).
    pub(crate) gap_switched_ticks: AtomicU64,
    pub(crate) counts: NodeCounts,
    pub(crate) durations: AtomicHistogram,
    /// Index of this node's frame in the thread's `site_durations`; `NO_DURATIONS` for
    /// the root, which never closes an episode.
    pub(super) site_durations: AtomicU32,
}

pub(super) const NO_DURATIONS: u32 = u32::MAX;

/// One frame's fine durations on this thread, whatever the stack: of its episodes, or
/// of the timed calls of one kind made directly in it.
#[derive(Default)]
pub(super) struct SiteDurations {
    pub(super) frame: AtomicU32,
    /// `EPISODES`, or 1 + the call kind's index in `Kind::ALL`.
    pub(super) kind: AtomicU32,
    pub(super) durations: AtomicDurations,
}

pub(super) const EPISODES: u32 = 0;

#[derive(Default)]
pub(crate) struct Slot {
    pub(super) key: AtomicUsize,
    pub(super) call: AtomicU32,
    pub(super) next: Link,
    pub(crate) calls: AtomicU64,
    pub(crate) ns: AtomicU64,
    /// Off-CPU time inside the calls, ns (not ticks), where the thread sees switches
    /// on every call.
    pub(crate) off_ns: AtomicU64,
    /// 1 + the index of the fine durations of its frame's calls of its kind; 0 when
    /// the kind is not timed (or the table is full).
    pub(super) durations: AtomicU32,
}

/// One thread's recording, shared between the thread and the registry.
pub(crate) struct ThreadData {
    pub(super) serial: u64,
    pub(super) tid: i32,
    pub(super) name: String,
    /// The tick its recorded life starts at: where its registration began.
    pub(super) start_ns: AtomicU64,
    /// The tick its life ended at, once it exited (0 before): a copy made after the
    /// exit counts up to it.
    pub(super) ended: AtomicU64,
    pub(super) nodes: Arena<Node>,
    pub(super) slots: Arena<Slot>,
    pub(super) site_durations: Arena<SiteDurations>,
    pub(super) overflowed: AtomicU64,
    /// Entries skipped because they interrupted yieldprof on this thread (a signal
    /// handler): the thread's running total, published by the thread itself.
    pub(super) reentries_skipped: AtomicU64,
    pub(crate) counters: ThreadCounters,
    /// The last wait episodes, for the timeline.
    pub(crate) timeline: Ring,
    /// Episodes closed on the hot path, not folded into the tree yet (`record::fold`).
    pub(crate) records: Records,
    /// Per site, episodes that returned without waiting (`record::lazy`).
    pub(super) unwaited: UnwaitedTable,
    /// The profiler's own ticks here (each also a node's): a timed call leaves them out.
    pub(crate) profiler_ticks: AtomicU64,
    /// The stretch between waits in progress, for a copy made meanwhile: its start
    /// tick (0: none, in a wait call or spinning) and its node (`record::gaps`).
    pub(crate) stretch: AtomicU64,
    pub(crate) stretch_node: AtomicU32,
    /// The frame close in progress, for a copy made meanwhile.
    pub(crate) closing: Closing,
}

impl ThreadData {
    fn new(serial: u64, max_nodes: u32, timeline: u32) -> Self {
        let name = std::thread::current()
            .name()
            .and_then(host_name)
            .unwrap_or_else(|| format!("thread-{serial}"));
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let data = ThreadData {
            serial,
            tid,
            name,
            start_ns: AtomicU64::new(clock::now()),
            ended: AtomicU64::new(0),
            nodes: Arena::new(max_nodes),
            slots: Arena::new(max_nodes.saturating_mul(2)),
            // A frame needs a node, so there are never more frames than nodes.
            site_durations: Arena::new(max_nodes),
            overflowed: AtomicU64::new(0),
            reentries_skipped: AtomicU64::new(0),
            counters: ThreadCounters::default(),
            timeline: Ring::new(timeline),
            records: Records::default(),
            unwaited: UnwaitedTable::new(max_nodes),
            profiler_ticks: AtomicU64::new(0),
            stretch: AtomicU64::new(0),
            stretch_node: AtomicU32::new(0),
            closing: Closing::default(),
        };
        data.nodes.push(|n| {
            n.frame.store(THREAD_FRAME, Relaxed);
            n.site_durations.store(NO_DURATIONS, Relaxed);
        });
        let overflow = data.site_durations_of(OVERFLOW_FRAME, EPISODES);
        data.nodes.push(|n| {
            n.frame.store(OVERFLOW_FRAME, Relaxed);
            n.site_durations.store(overflow, Relaxed);
        });
        data.slots.push(|s| s.call.store(OVERFLOW_CALL, Relaxed));
        data
    }

    pub(crate) fn node(&self, i: u32) -> &Node {
        self.nodes.get(i)
    }

    /// The key (site address) of node `i`'s frame.
    #[inline]
    pub(crate) fn node_key(&self, i: u32) -> usize {
        self.node(i).key.load(Relaxed)
    }

    /// The thread's serial number: 1 for the first thread to record, and so on.
    pub(crate) fn serial(&self) -> u64 {
        self.serial
    }

    pub(crate) fn slot(&self, i: u32) -> &Slot {
        self.slots.get(i)
    }

    /// Owner only, on a new node or slot: the index of the fine durations of `frame`'s
    /// episodes or calls of one kind (`code`), added on first use (a thread meets few
    /// frames, so a scan is enough).
    pub(super) fn site_durations_of(&self, frame: u32, code: u32) -> u32 {
        let known = (0..self.site_durations.len()).find(|&i| {
            let d = self.site_durations.get(i);
            d.frame.load(Relaxed) == frame && d.kind.load(Relaxed) == code
        });
        known.unwrap_or_else(|| {
            self.site_durations
                .push(|d| {
                    d.frame.store(frame, Relaxed);
                    d.kind.store(code, Relaxed);
                    d.durations.ready();
                })
                .unwrap_or(NO_DURATIONS)
        })
    }

    /// Owner only: a timed call in `slot` that lasted `ticks`.
    #[inline(always)]
    pub(crate) fn record_call_duration(&self, slot: &Slot, ticks: u64) {
        let at = slot.durations.load(Relaxed);
        if at != 0 {
            self.site_durations.get(at - 1).durations.record(ticks);
        }
    }

    /// Owner only: an episode of `node` that lasted `ticks`.
    #[inline(always)]
    pub(crate) fn record_duration(&self, node: u32, ticks: u64) {
        self.record_duration_of(self.node(node), ticks);
    }

    /// Owner only: an episode of node `n` that lasted `ticks`.
    #[inline(always)]
    pub(crate) fn record_duration_of(&self, n: &Node, ticks: u64) {
        n.durations.record(ticks);
        if let Some(fine) = self.fine_durations(n) {
            fine.record(ticks);
        }
    }

    /// The fine durations of node `n`'s frame's episodes on this thread.
    #[inline(always)]
    pub(crate) fn fine_durations(&self, n: &Node) -> Option<&AtomicDurations> {
        let at = n.site_durations.load(Relaxed);
        (at != NO_DURATIONS).then(|| &self.site_durations.get(at).durations)
    }
}

/// The thread-local handle. Dropped at the thread's exit: its data moves to the registry.
pub(crate) struct Local {
    pub(crate) data: Arc<ThreadData>,
    pub(crate) current: Cell<u32>,
    pub(crate) counters: LocalCounters,
    pub(crate) claimed: Cell<Claimed>,
    pub(crate) tally: Cell<Tally>,
    pub(crate) open: OpenFrames,
    pub(crate) unread: Unread,
    /// How many of this thread's skipped entries (`reentry::skipped`) are in `data`.
    published: Cell<u64>,
    /// The tick the last wait call or nested frame ended at (0 after a spin), and the
    /// page's switch count then (`u32::MAX`: not known; `record::gaps`).
    pub(super) gap_from: Cell<u64>,
    pub(super) gap_count: Cell<u32>,
    /// Its records written then (`Records::written`), and its profiler's ticks.
    pub(super) gap_records: Cell<u64>,
    pub(super) gap_profiler: Cell<u64>,
}

impl Drop for Local {
    fn drop(&mut self) {
        // The hot path's records and open fast entry (`record::fold`).
        self.catch_up();
        open::forget_unwaited_cache();
        // Its closed episodes' switch figures (`record::deferred`).
        self.settle(true);
        self.counters.close(&self.data.counters);
        publish_skipped(self);
        self.data
            .counters
            .store_cpu(true, counters::thread_cpu_now());
        self.data.ended.store(clock::now().max(1), Relaxed);
        // Its copy is made later (a report, or past `MAX_EXITING`), not on the exit
        // path: a pool's workers that exit together pay none of it (copy and free,
        // ~30 µs a thread in `perf record` of a pool's start, 2026-12-04).
        let mut r = registry();
        r.live.retain(|t| !Arc::ptr_eq(t, &self.data));
        r.exiting.push(self.data.clone());
        if r.exiting.len() > MAX_EXITING {
            // One copy per exit past the bound, as before it: no exit pays for many.
            let oldest = r.exiting.remove(0);
            r.exited.keep(oldest.snapshot(true, false));
        }
    }
}

thread_local! {
    /// Set while a thread that exits holding early counts sets up (`set_up_at_exit`).
    static AT_EXIT: Cell<bool> = const { Cell::new(false) };
}

/// A thread exits holding early counts (`record::unwaited`), never set up: it sets up
/// now, so that its exited profile keeps them (and an entry from a destructor that
/// runs later finds it gone, as any thread's), with no timeline, the fewest nodes and
/// no profiler time. Set up in full, 1000 threads that exited together after locking a
/// spin mutex once each read `[profiler]` 131 % of their wall (2026-12-06).
pub(crate) fn set_up_at_exit() {
    AT_EXIT.set(true);
    enter(|_| ());
    AT_EXIT.set(false);
}

/// Serial numbers: 1 for the first thread to record, and so on. Taken outside the
/// registry lock, and a thread's data made outside it too: 1000 threads setting up
/// together queued 140-210 ms each on it (mapping each one's timeline under it).
fn next_serial() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    LAST.fetch_add(1, Relaxed) + 1
}

thread_local! {
    static LOCAL: Local = register();
}

fn register() -> Local {
    // Its switches so far are its totals' part from before it recorded.
    // Its CPU clock where its wall starts (short threads read 7-9 % under their own
    // clocks when it began after their data was made).
    let (t0, cpu0, before) = (
        clock::now(),
        counters::thread_cpu_now(),
        counters::Switches::own(),
    );
    let at_exit = AT_EXIT.get();
    let data = {
        let (nodes, timeline) = match at_exit {
            true => (crate::config::MIN_NODES, 0),
            false => (crate::config::max_nodes(), crate::config::timeline()),
        };
        let data = Arc::new(ThreadData::new(next_serial(), nodes, timeline));
        data.counters.store_cpu(false, cpu0);
        registry().live.push(data.clone());
        data
    };
    SERIAL.with(|s| s.set(data.serial));
    data.unwaited.take_early(open::lazy());
    // Outside the registry lock: opening perf counters takes a few syscalls.
    let counters = LocalCounters::open(&data.counters, before);
    // The thread's life starts where its set-up began; the set-up is the profiler's
    // (at its exit, the exit's), where it ran throughout: switched out in it (its
    // allocations can block; under load, preempted), its wall is no measure of its cost
    // (0.5 ms a thread at a load of 7, 2026-12-06).
    let end = clock::now();
    let ran = counters::Switches::own() == before && !at_exit;
    let ticks = end.saturating_sub(t0) * u64::from(ran);
    data.start_ns.store(t0, Relaxed);
    bump(&data.node(ROOT).profiler_ticks, ticks);
    bump(&data.profiler_ticks, ticks);
    Local {
        data,
        current: Cell::new(ROOT),
        counters,
        claimed: Cell::new(Claimed::ZERO),
        tally: Cell::new(Tally::ZERO),
        open: OpenFrames::default(),
        unread: Unread::default(),
        published: Cell::new(0),
        gap_from: Cell::new(0),
        gap_count: Cell::new(u32::MAX),
        gap_records: Cell::new(0),
        gap_profiler: Cell::new(0),
    }
}

/// Why this thread's state could not be used.
enum Missed {
    /// The call interrupted yieldprof's own code on this thread (a signal handler, an
    /// allocator calling back): its state is in use.
    Reentered,
    /// The thread's state is gone: a thread-local destructor or `atexit` handler ran
    /// after yieldprof's.
    TornDown,
}

#[inline(always)]
fn guarded<R>(f: impl FnOnce(&Local, &Inside) -> R) -> Result<R, Missed> {
    let Some(inside) = Inside::enter() else {
        return Err(Missed::Reentered);
    };
    LOCAL
        .try_with(|l| f(l, &inside))
        .map_err(|_| Missed::TornDown)
}

/// Runs `f` on this thread's state, its tree first brought up to date with the hot
/// path (`record::fold`); `None` while the thread is being torn down or when the call
/// interrupted yieldprof on this thread.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    guarded(|l, _| {
        l.catch_up();
        f(l)
    })
    .ok()
}

/// As [`with`], for the hot path (`record::lazy`), which leaves the tree behind.
#[inline(always)]
pub(crate) fn with_hot<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    guarded(|l, _| f(l)).ok()
}

/// As [`with`], for an entry (a frame or a call): one that cannot be recorded is
/// counted, as skipped or as after the thread's exit.
#[inline(always)]
pub(crate) fn enter<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    enter_hot(|l| {
        l.catch_up();
        f(l)
    })
}

/// As [`enter`], for the hot path (`record::lazy`), which leaves the tree behind.
#[inline(always)]
pub(crate) fn enter_hot<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    match guarded(|l, inside| {
        if inside.skipped() != l.published.get() {
            publish_skipped(l);
        }
        f(l)
    }) {
        Ok(r) => Some(r),
        Err(Missed::Reentered) => {
            reentry::skip();
            None
        }
        Err(Missed::TornDown) => {
            after_exit();
            None
        }
    }
}

/// Owner only: makes this thread's skipped entries visible to reports.
fn publish_skipped(l: &Local) {
    let skipped = reentry::skipped();
    l.data.reentries_skipped.store(skipped, Relaxed);
    l.published.set(skipped);
}

/// Counts an entry on a thread whose state is gone into its exited profile.
#[cold]
fn after_exit() {
    let serial = SERIAL.get();
    let mut r = registry();
    r.copy_exiting();
    if let Some(t) = r.exited.by_serial(serial) {
        t.entries_after_exit += 1;
    }
}

/// Exited threads kept uncopied at most; past it, an exiting thread copies the oldest.
const MAX_EXITING: usize = 64;

#[derive(Default)]
pub(crate) struct Registry {
    live: Vec<Arc<ThreadData>>,
    /// Threads that exited, not copied yet (at most `MAX_EXITING`, oldest first):
    /// a report copies them first.
    exiting: Vec<Arc<ThreadData>>,
    exited: Exited,
    /// In a forked child: the forking thread as it was at the fork, which reports
    /// subtract so the child shows only its own recording.
    fork_base: Option<ThreadProfile>,
}

fn registry() -> Locked<Registry> {
    static REGISTRY: ForkMutex<Registry> = ForkMutex::new(
        Registry {
            live: Vec::new(),
            exiting: Vec::new(),
            exited: Exited::new(),
            fork_base: None,
        },
        Registry::in_forked_child,
    );
    REGISTRY.lock()
}

impl Registry {
    /// Copies the exited threads not copied yet into `exited`, in the order they exited.
    fn copy_exiting(&mut self) {
        for t in std::mem::take(&mut self.exiting) {
            self.exited.keep(t.snapshot(true, false));
        }
    }

    /// In a child made by `fork()`: forgets the parent's other threads (it has none of
    /// them) and keeps the forking thread's counts at the fork for its reports to subtract.
    fn in_forked_child(&mut self) {
        // The kernel copies no perf mapping into a child: none may be read there.
        counters::forget_pages_after_fork();
        let me = SERIAL.try_with(Cell::get).unwrap_or(0);
        self.live.retain(|t| t.serial == me);
        self.exiting.clear();
        self.exited = Exited::new();
        // The child's kernel counts its switches from the fork: none to subtract.
        let base = self.live.first().map(|t| t.snapshot(false, false));
        self.fork_base = base.map(ThreadProfile::without_switches);
    }
}

/// This thread's serial number (registering the thread if it has not recorded yet).
pub(crate) fn current_serial() -> Option<u64> {
    with(|l| l.data.serial)
}

/// This thread's serial number and the frame id of its innermost frame, open or
/// pending (the false-sharing detector attributes watched reads to wait sites with
/// it): a read inside an episode that has not waited yet is still that site's.
#[inline(always)]
pub(crate) fn current_frame() -> Option<(u64, u32)> {
    with(|l| {
        let pending = open::innermost_pending()
            .and_then(|site| l.data.unwaited.entry(site))
            .map(UnwaitedTable::frame);
        let frame = pending.unwrap_or_else(|| l.data.node(l.current.get()).frame.load(Relaxed));
        (l.data.serial, frame)
    })
}

/// Every thread that ever recorded: live ones read in place, exited ones as kept.
pub(crate) fn all_threads() -> Vec<ThreadProfile> {
    // The calling thread's counter totals are brought up to now; others' are as of
    // their last sampled episode. Its early counts (`record::unwaited`) register it.
    if open::lazy().holds_early() {
        with(|_| ());
    }
    if counters::open_here() {
        with(|l| {
            l.settle(false);
            l.counters.refresh(&l.data.counters);
        });
    }
    let (live, mut out, base) = {
        let mut r = registry();
        // Under the lock, so that no report sees an exited thread in neither place
        // and the exited ones merge per name as they would at their exits: at most
        // `MAX_EXITING` copies, the exits a report makes wait for.
        r.copy_exiting();
        let kept = r.exited.all();
        (r.live.clone(), kept, r.fork_base.clone())
    };
    // Read live threads outside the lock so thread start/exit never waits on a report;
    // the others' switches from their status files (the calling thread's are fresh).
    let me = SERIAL.get();
    out.extend(live.iter().map(|t| t.snapshot(false, t.serial != me)));
    if let Some(base) = base {
        for t in out.iter_mut().filter(|t| t.serial == base.serial) {
            *t = t.since(&base);
        }
    }
    out.sort_by_key(|t| t.serial);
    out
}

/// Copies what every thread, live or exited, has recorded. Live threads go on
/// recording while it reads: there is no stop-the-world.
pub fn snapshot() -> Profile {
    let scale = clock::Scale::current();
    let mut threads = all_threads();
    for t in &mut threads {
        t.scale_to_ns(scale);
    }
    // Tables after threads, so every id a thread holds is in them.
    let (frames, calls) = site::tables();
    Profile::new(threads, frames, calls)
}
