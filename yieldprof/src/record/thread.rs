//! Per-thread recording state and the registry that keeps it after the thread exits.
//!
//! Each thread owns a calling-context tree (CCT) of frames. Only the owner writes it,
//! with relaxed load+store pairs on atomics (no read-modify-write, no lock); a report
//! reads the same atomics from another thread while the owner runs on.

use crate::base::arena::{bump, Arena, Link};
use crate::base::clock;
use crate::base::site::{self, CallInfo, FrameInfo, OVERFLOW_CALL, OVERFLOW_FRAME, THREAD_FRAME};
use crate::counters::{self, LocalCounters, NodeCounts, ThreadCounters, ThreadSnap};
use crate::model::histogram::AtomicHistogram;
use crate::model::profile::Profile;
use crate::model::thread::{NodeStats, SlotStats, ThreadProfile};
use crate::record::fork;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};

/// Index of a thread's root node; also "no node" in child and sibling links, since
/// the root is never anyone's child.
pub(crate) const ROOT: u32 = 0;
/// Index of the node that takes every entry past the cap.
pub(crate) const OVERFLOW: u32 = 1;
/// Slot 0 takes every call past the slot cap; also "no slot" in slot links.
const OVERFLOW_SLOT: u32 = 0;

/// Durations here are clock ticks (see `clock`); reports convert them to ns.
#[derive(Default)]
pub(crate) struct Node {
    key: AtomicUsize,
    frame: AtomicU32,
    parent: AtomicU32,
    first_child: Link,
    next_sibling: Link,
    first_slot: Link,
    pub(crate) episodes: AtomicU64,
    pub(crate) wall_ns: AtomicU64,
    pub(crate) counts: NodeCounts,
    pub(crate) durations: AtomicHistogram,
}

#[derive(Default)]
pub(crate) struct Slot {
    key: AtomicUsize,
    call: AtomicU32,
    next: Link,
    pub(crate) calls: AtomicU64,
    pub(crate) ns: AtomicU64,
    /// Off-CPU time inside the calls, ns (not ticks), where the thread sees switches
    /// on every call.
    pub(crate) off_ns: AtomicU64,
}

/// One thread's recording, shared between the thread and the registry.
pub(crate) struct ThreadData {
    serial: u64,
    tid: i32,
    /// The kernel's run-queue wait of this thread when it first recorded.
    run_queue_start: Option<u64>,
    name: String,
    start_ns: u64,
    nodes: Arena<Node>,
    slots: Arena<Slot>,
    overflowed: AtomicU64,
    pub(crate) counters: ThreadCounters,
}

impl ThreadData {
    fn new(serial: u64, max_nodes: u32) -> Self {
        let name = match std::thread::current().name() {
            Some(n) => n.to_string(),
            None => format!("thread-{serial}"),
        };
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let data = ThreadData {
            serial,
            tid,
            run_queue_start: counters::run_queue_ns(tid),
            name,
            start_ns: clock::now(),
            nodes: Arena::new(max_nodes),
            slots: Arena::new(max_nodes.saturating_mul(2)),
            overflowed: AtomicU64::new(0),
            counters: ThreadCounters::default(),
        };
        for frame in [THREAD_FRAME, OVERFLOW_FRAME] {
            data.nodes.push(|n| n.frame.store(frame, Relaxed));
        }
        data.slots.push(|s| s.call.store(OVERFLOW_CALL, Relaxed));
        data
    }

    pub(crate) fn node(&self, i: u32) -> &Node {
        self.nodes.get(i)
    }

    /// The thread's serial number: 1 for the first thread to record, and so on.
    pub(crate) fn serial(&self) -> u64 {
        self.serial
    }

    pub(crate) fn slot(&self, i: u32) -> &Slot {
        self.slots.get(i)
    }

    /// The child of `parent` for the frame whose static lives at `key`.
    #[inline]
    pub(crate) fn child(&self, parent: u32, key: usize, info: impl FnOnce() -> FrameInfo) -> u32 {
        if parent == OVERFLOW {
            bump(&self.overflowed, 1);
            return OVERFLOW;
        }
        let p = self.node(parent);
        let mut c = p.first_child.own();
        while c != ROOT {
            let n = self.node(c);
            if n.key.load(Relaxed) == key {
                return c;
            }
            c = n.next_sibling.own();
        }
        self.new_child(parent, key, info)
    }

    #[cold]
    fn new_child(&self, parent: u32, key: usize, info: impl FnOnce() -> FrameInfo) -> u32 {
        let frame = site::frame_id(key, info);
        let p = self.node(parent);
        let pushed = self.nodes.push(|n| {
            n.key.store(key, Relaxed);
            n.frame.store(frame, Relaxed);
            n.parent.store(parent, Relaxed);
            n.next_sibling.set(p.first_child.own());
        });
        match pushed {
            Some(i) => {
                p.first_child.set(i);
                i
            }
            None => {
                bump(&self.overflowed, 1);
                OVERFLOW
            }
        }
    }

    /// The slot of `node` for the call site at `key`.
    #[inline]
    pub(crate) fn slot_of(&self, node: u32, key: usize, info: impl FnOnce() -> CallInfo) -> &Slot {
        let n = self.node(node);
        let mut s = n.first_slot.own();
        while s != OVERFLOW_SLOT {
            let slot = self.slot(s);
            if slot.key.load(Relaxed) == key {
                return slot;
            }
            s = slot.next.own();
        }
        self.slot(self.new_slot(node, key, info))
    }

    #[cold]
    fn new_slot(&self, node: u32, key: usize, info: impl FnOnce() -> CallInfo) -> u32 {
        let call = site::call_id(key, info);
        let n = self.node(node);
        let pushed = self.slots.push(|s| {
            s.key.store(key, Relaxed);
            s.call.store(call, Relaxed);
            s.next.set(n.first_slot.own());
        });
        match pushed {
            Some(i) => {
                n.first_slot.set(i);
                i
            }
            None => OVERFLOW_SLOT,
        }
    }

    /// A consistent-enough copy: every counter is read once; an episode still open
    /// counts in its parent's self time until it closes.
    pub(crate) fn snapshot(&self, exited: bool) -> ThreadProfile {
        let n_nodes = self.nodes.len();
        let mut nodes: Vec<NodeStats> = (0..n_nodes)
            .map(|i| {
                let n = self.node(i);
                NodeStats {
                    frame: n.frame.load(Relaxed),
                    parent: n.parent.load(Relaxed),
                    episodes: n.episodes.load(Relaxed),
                    wall_ns: n.wall_ns.load(Relaxed),
                    durations: n.durations.load(),
                    counts: self.counters.node(&n.counts, n.wall_ns.load(Relaxed)),
                    slots: Vec::new(),
                }
            })
            .collect();
        for i in 0..n_nodes {
            // Links, not `len`, say which slots a reader may touch: see `Link`.
            let mut s = self.node(i).first_slot.read();
            while s != OVERFLOW_SLOT {
                let slot = self.slot(s);
                nodes[i as usize].slots.push(SlotStats {
                    call: slot.call.load(Relaxed),
                    calls: slot.calls.load(Relaxed),
                    ns: slot.ns.load(Relaxed),
                    off_ns: slot.off_ns.load(Relaxed),
                });
                s = slot.next.read();
            }
        }
        let lost = self.slot(OVERFLOW_SLOT);
        if lost.calls.load(Relaxed) > 0 {
            nodes[OVERFLOW as usize].slots.push(SlotStats {
                call: OVERFLOW_CALL,
                calls: lost.calls.load(Relaxed),
                ns: lost.ns.load(Relaxed),
                off_ns: lost.off_ns.load(Relaxed),
            });
        }
        nodes[ROOT as usize].wall_ns = clock::now().saturating_sub(self.start_ns);
        nodes[ROOT as usize].episodes = 1;
        nodes[ROOT as usize].counts = self.counters.root(nodes[ROOT as usize].wall_ns);
        ThreadProfile {
            serial: self.serial,
            tid: self.tid,
            name: self.name.clone(),
            exited,
            overflowed: self.overflowed.load(Relaxed),
            nodes,
            counters: ThreadSnap {
                run_queue_ns: counters::run_queue_ns(self.tid)
                    .zip(self.run_queue_start)
                    .map(|(now, start)| now.saturating_sub(start)),
                ..self.counters.snapshot()
            },
        }
    }
}

/// Wall ticks and off-CPU ns that closed guards have accounted for on this thread:
/// a timed call subtracts what guards nested in it took (a lock taken in the argument
/// of a condvar wait), so no time counts twice.
#[derive(Clone, Copy)]
pub(crate) struct Claimed {
    pub(crate) ticks: u64,
    pub(crate) off_ns: u64,
}

impl Claimed {
    pub(crate) const ZERO: Claimed = Claimed {
        ticks: 0,
        off_ns: 0,
    };
}

impl Local {
    /// A guard that opened when `at_open` was claimed closes after `ticks` (`off_ns`
    /// of them off the CPU): its own share, less what guards closed inside it claimed,
    /// is claimed now and returned. The claims only grow, so a guard that outlives
    /// the guards opened after it (held across an `.await`) miscounts only itself.
    #[inline]
    pub(crate) fn claim(&self, at_open: Claimed, ticks: u64, off_ns: u64) -> Claimed {
        let now = self.claimed.get();
        let own = Claimed {
            ticks: ticks.saturating_sub(now.ticks.wrapping_sub(at_open.ticks)),
            off_ns: off_ns.saturating_sub(now.off_ns.wrapping_sub(at_open.off_ns)),
        };
        self.claimed.set(Claimed {
            ticks: now.ticks.wrapping_add(own.ticks),
            off_ns: now.off_ns.wrapping_add(own.off_ns),
        });
        own
    }
}

/// The thread-local handle. Dropped when the thread exits: its data then moves into
/// the registry as a finished profile.
pub(crate) struct Local {
    pub(crate) data: Arc<ThreadData>,
    pub(crate) current: Cell<u32>,
    pub(crate) counters: LocalCounters,
    pub(crate) claimed: Cell<Claimed>,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.counters.refresh(&self.data.counters);
        let done = self.data.snapshot(true);
        let mut r = registry();
        r.live.retain(|t| !Arc::ptr_eq(t, &self.data));
        r.keep(done);
    }
}

thread_local! {
    static LOCAL: Local = register();
    /// This thread's serial once registered (0 before): readable without registering.
    static SERIAL: Cell<u64> = const { Cell::new(0) };
    /// The locks `hold_for_fork` took, until the fork returns in parent or child.
    static HELD: RefCell<Option<(MutexGuard<'static, Registry>, site::TableHold)>> =
        const { RefCell::new(None) };
}

fn register() -> Local {
    install_fork_handlers();
    let data = {
        let mut r = registry();
        r.next_serial += 1;
        let data = Arc::new(ThreadData::new(r.next_serial, crate::config::max_nodes()));
        r.live.push(data.clone());
        data
    };
    SERIAL.with(|s| s.set(data.serial));
    // Outside the registry lock: opening perf counters takes a few syscalls.
    let counters = LocalCounters::open(&data.counters);
    Local {
        data,
        current: Cell::new(ROOT),
        counters,
        claimed: Cell::new(Claimed::ZERO),
    }
}

/// Runs `f` on this thread's state; `None` while the thread is being torn down.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    LOCAL.try_with(f).ok()
}

#[derive(Default)]
pub(crate) struct Registry {
    next_serial: u64,
    live: Vec<Arc<ThreadData>>,
    exited: Vec<ThreadProfile>,
    /// Threads that exited after `exited` was full, merged per name (see `keep`).
    merged: Vec<ThreadProfile>,
    /// In a forked child: the forking thread as it was at the fork, which reports
    /// subtract so the child shows only its own recording.
    fork_base: Option<ThreadProfile>,
}

/// Exited threads kept one by one (~1 KiB each); later ones are merged per name (up
/// to 256 names, unnamed threads and the rest as `[exited threads]`), so a program
/// that starts a thread per request keeps bounded memory.
pub(crate) const MAX_EXITED_THREADS: usize = 10_000;
/// Names kept apart once merging starts; the rest share one profile.
const MAX_MERGED_NAMES: usize = 256;
const MERGED_UNNAMED: &str = "[exited threads]";

impl Registry {
    /// Keeps an exited thread's profile: as it is while there is room, else added into
    /// the merged profile of its name (unnamed threads, and names past the cap, share
    /// one). A session spanning the merge counts the merged thread's earlier
    /// recording again; `MAX_EXITED_THREADS` exits have to come first.
    fn keep(&mut self, done: ThreadProfile) {
        if self.exited.len() < MAX_EXITED_THREADS {
            self.exited.push(done);
            return;
        }
        let unnamed = done.name == format!("thread-{}", done.serial);
        let mut name = if unnamed {
            MERGED_UNNAMED
        } else {
            done.name.as_str()
        };
        if self.merged.len() >= MAX_MERGED_NAMES && !self.merged.iter().any(|m| m.name == name) {
            name = MERGED_UNNAMED;
        }
        match self.merged.iter_mut().find(|m| m.name == name) {
            Some(m) => m.absorb(&done),
            None => {
                // Serials count up from 1; merged profiles take the top of the range.
                let serial = u64::MAX - self.merged.len() as u64;
                self.merged.push(ThreadProfile {
                    serial,
                    name: name.to_string(),
                    ..done
                });
            }
        }
    }
}

fn registry() -> MutexGuard<'static, Registry> {
    static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
        next_serial: 0,
        live: Vec::new(),
        exited: Vec::new(),
        merged: Vec::new(),
        fork_base: None,
    });
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers the `fork()` handlers once; called when the first thread registers.
pub(crate) fn install_fork_handlers() {
    extern "C" fn prepare() {
        hold_for_fork();
    }
    extern "C" fn parent() {
        release_after_fork(false);
    }
    extern "C" fn child() {
        fork::mark_child();
        // The kernel copies no perf mapping into a child: none may be read there.
        counters::forget_pages_after_fork();
        release_after_fork(true);
    }
    fork::install(prepare, parent, child);
}

/// `fork()` is about to run on this thread: takes the locks a child could otherwise
/// inherit held by a thread it does not have. Site table first, as nowhere else takes
/// both.
fn hold_for_fork() {
    let _ = HELD.try_with(|h| {
        let sites = site::hold_for_fork();
        *h.borrow_mut() = Some((registry(), sites));
    });
}

/// After `fork()`: releases the locks; in the child, first forgets the parent's other
/// threads and keeps this one's counts at the fork as the baseline.
fn release_after_fork(in_child: bool) {
    let _ = HELD.try_with(|h| {
        let Some((mut r, sites)) = h.borrow_mut().take() else {
            return;
        };
        if in_child {
            let me = SERIAL.try_with(Cell::get).unwrap_or(0);
            r.live.retain(|t| t.serial == me);
            r.exited.clear();
            r.merged.clear();
            r.fork_base = r.live.first().map(|t| t.snapshot(false));
        }
        drop(r);
        drop(sites);
    });
}

/// This thread's serial number (registering the thread if it has not recorded yet).
pub(crate) fn current_serial() -> Option<u64> {
    with(|l| l.data.serial)
}

/// This thread's serial number and the frame id of its innermost open frame (the
/// false-sharing detector attributes watched reads to wait sites with it).
#[inline(always)]
pub(crate) fn current_frame() -> Option<(u64, u32)> {
    with(|l| {
        let frame = l.data.node(l.current.get()).frame.load(Relaxed);
        (l.data.serial, frame)
    })
}

/// Every thread that ever recorded: live ones read in place, exited ones as kept.
pub(crate) fn all_threads() -> Vec<ThreadProfile> {
    // The calling thread's counter totals are brought up to now; others' are as of
    // their last sampled episode.
    if counters::open_here() {
        with(|l| l.counters.refresh(&l.data.counters));
    }
    let (live, mut out, base) = {
        let r = registry();
        let mut kept = r.exited.clone();
        kept.extend(r.merged.iter().cloned());
        (r.live.clone(), kept, r.fork_base.clone())
    };
    // Read live threads outside the lock so thread start/exit never waits on a report.
    out.extend(live.iter().map(|t| t.snapshot(false)));
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
///
/// ```
/// let profile = yieldprof::snapshot();
/// assert!(profile.threads().len() <= profile.threads().len());
/// ```
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
