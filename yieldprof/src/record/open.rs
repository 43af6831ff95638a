//! What an open frame keeps off its guard: its switch mark, what closed guards had
//! claimed when it opened, and its counter sample. The guard lives in the stack frame
//! of the annotated function, which a deep recursion pays for at every level; this
//! lives in one list per thread instead.

use crate::base::arena::{bump, Arena};
use crate::base::site::{self, EpisodeSite};
use crate::counters::{Mark, Split};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

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

/// The wait calls made on this thread since the innermost open wait frame opened: a
/// closing wait frame's calls and kinds of wait, for its timeline entry. Nested
/// frames' calls count in the frames around them too.
#[derive(Clone, Copy, Default)]
pub(crate) struct Tally {
    pub(crate) calls: u32,
    /// Bit per kind (`Kind::bit`).
    pub(crate) kinds: u16,
}

impl Tally {
    pub(crate) const ZERO: Tally = Tally { calls: 0, kinds: 0 };

    /// Both tallies together.
    #[inline(always)]
    pub(crate) fn plus(self, other: Tally) -> Tally {
        Tally {
            calls: self.calls.saturating_add(other.calls),
            kinds: self.kinds | other.kinds,
        }
    }
}

/// One open frame's state.
#[derive(Clone, Copy)]
pub(crate) struct Opened {
    /// Its node, and the thread's current node before it opened.
    pub(crate) node: u32,
    pub(crate) prev: u32,
    /// The tick it opened at.
    pub(crate) start: u64,
    /// A wait frame (else a business frame), and whether it counts an episode when it
    /// closes (not the frame a closure or an async poll opens).
    pub(crate) wait: bool,
    pub(crate) count: bool,
    /// A business frame opened straight inside a wait frame (a job a pool worker runs
    /// while it waits): it goes into the timeline too, so pool findings see when each
    /// job ran.
    pub(crate) job: bool,
    /// The thread's switch figures when it opened (wait frames; `Mark::ZERO` else).
    pub(crate) mark: Mark,
    /// What closed guards had claimed when it opened.
    pub(crate) claimed: Claimed,
    /// Its opening counter reading, when it is sampled.
    pub(crate) sample: u32,
    /// The thread's tally when it opened (wait frames, which start their own at
    /// zero; `Tally::ZERO` else).
    pub(crate) tally: Tally,
}

/// This thread's open frames in the order they opened, each with whether it closed;
/// and what the close of a call begun on the fast path needs once its entry became a
/// frame (`record::lazy`): the thread's mark, claims and profiler ticks when it opened.
#[derive(Default)]
pub(crate) struct OpenFrames(
    RefCell<Vec<(Opened, bool)>>,
    Cell<Option<(Mark, Claimed, u64)>>,
);

impl OpenFrames {
    /// A call begun on the fast path is running in a frame that just opened: what its
    /// close will need.
    pub(crate) fn call_began(&self, began: (Mark, Claimed, u64)) {
        self.1.set(Some(began));
    }

    /// That call closes: what [`OpenFrames::call_began`] kept.
    pub(crate) fn take_call(&self) -> Option<(Mark, Claimed, u64)> {
        self.1.take()
    }

    /// A frame opened: its slot.
    #[inline]
    pub(crate) fn push(&self, opened: Opened) -> u32 {
        let mut frames = self.0.borrow_mut();
        frames.push((opened, false));
        frames.len() as u32 - 1
    }

    /// Whether the innermost open frame is a wait frame.
    #[inline]
    pub(crate) fn in_wait(&self) -> bool {
        let frames = self.0.borrow();
        frames.last().is_some_and(|(opened, _)| opened.wait)
    }

    /// The node of the frame in `slot`, while it is open.
    #[inline]
    pub(crate) fn node(&self, slot: u32) -> Option<u32> {
        let frames = self.0.borrow();
        frames.get(slot as usize).map(|(opened, _)| opened.node)
    }

    /// Whether a wait frame on `node` is open with a mark taken unread at switch
    /// count `at`: the [`Ended`] of its node that ended there is what it continues.
    pub(crate) fn continues(&self, node: u32, at: u32) -> bool {
        self.0.borrow().iter().any(|(o, closed)| {
            !closed && o.wait && o.node == node && !o.mark.is_read() && o.mark.switches == at
        })
    }

    /// The thread's figures were read at `now`: open wait frames marked unread at its
    /// switch count take them.
    pub(crate) fn read_at(&self, now: &Mark) {
        for (o, _) in self.0.borrow_mut().iter_mut() {
            if o.wait && !o.mark.is_read() && o.mark.switches == now.switches {
                o.mark = *now;
            }
        }
    }

    /// The frame in `slot` closed: its state. Slots are freed from the top only, so a
    /// frame still open above one closed out of order (frames held across `.await`)
    /// keeps its slot.
    #[inline]
    pub(crate) fn pop(&self, slot: u32) -> Option<Opened> {
        let mut frames = self.0.borrow_mut();
        let (opened, closed) = frames.get_mut(slot as usize)?;
        *closed = true;
        let opened = *opened;
        while frames.last().is_some_and(|(_, closed)| *closed) {
            frames.pop();
        }
        Some(opened)
    }
}

/// Episodes and calls that closed switched, whose switch figures are not read yet,
/// at most: more are read at once (`record::deferred`). They are the closes since
/// the thread's last mark, which every open takes: a few nested frames.
pub(crate) const UNREAD: usize = 16;

/// An episode or a timed call that ended after a switch: what its figures go to
/// once read (`record::deferred`).
#[derive(Clone, Copy)]
pub(crate) struct Ended {
    /// The thread's mark when it opened, and the page's switch count when it closed.
    pub(crate) start: Mark,
    pub(crate) end: u32,
    /// A wait frame's node (its counts take the figures), or a call's slot (its
    /// off-CPU time takes its own share).
    pub(crate) to: EndedOf,
    /// The off-CPU ns closed guards had claimed when it opened.
    pub(crate) claimed_off: u64,
    /// Its length, ticks: its off-CPU time is at most that.
    pub(crate) ticks: u64,
    /// Its thread's voluntary/involuntary switches at its end count: read at its close
    /// where that was cheap next to it (a wait frame: `record::deferred`), else a read's
    /// or a switched close's taken at that count; it keeps its split exact.
    pub(crate) split: Option<Split>,
}

/// What an [`Ended`] was.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndedOf {
    Frame(u32),
    Call(u32),
}

/// This thread's [`Ended`]s in the order they (last) closed, allocated once, at most
/// [`UNREAD`] long; and since the last read, how many episodes merged into them and
/// the tick it was made at.
pub(crate) struct Unread {
    pub(crate) ended: RefCell<Vec<Ended>>,
    pub(crate) merged: Cell<u32>,
    pub(crate) read_tick: Cell<u64>,
    /// The thread's off-CPU clock at the last read (`Mark::off_clock`), ns: what
    /// the episodes read next can share is the off-CPU time since.
    pub(crate) read_off: Cell<u64>,
    /// `Exact::count_ticks` when getrusage counts were last charged.
    pub(crate) count_charged: Cell<u64>,
}

impl Default for Unread {
    fn default() -> Self {
        Unread {
            ended: RefCell::new(Vec::with_capacity(UNREAD)),
            merged: Cell::new(0),
            read_tick: Cell::new(0),
            read_off: Cell::new(0),
            count_charged: Cell::new(0),
        }
    }
}

/// Wait episodes entered on this thread and not yet left, innermost last, up to this
/// many; deeper ones open their frames at entry.
pub(crate) const LAZY_DEPTH: usize = 64;
/// Sites whose "returned without waiting" count this thread reaches without a lookup.
pub(crate) const UNWAITED_CACHE: usize = 32;

/// The entry of a wait episode is only a mark here: its frame opens at its first wait
/// call (`record::lazy`). A `const` thread-local without a destructor, so reaching it
/// is one address computation, on any thread, at any time (teardown included).
pub(crate) struct Lazy {
    /// Episodes entered and not yet left.
    pub(crate) depth: Cell<u32>,
    /// How many of them, from the outermost, have their frames open ("live"); the
    /// rest are pending.
    pub(crate) live: Cell<u32>,
    /// Each entered episode's site (the address of its `EpisodeSite`, tagged with
    /// `NESTED`).
    pub(crate) sites: [Cell<usize>; LAZY_DEPTH],
    /// Each live episode's slot in the thread's open frames.
    pub(crate) slots: [Cell<u32>; LAZY_DEPTH],
    /// Each live episode's direct spins (one site's) from its `SpinCounts`, until it
    /// closes: `(call site address, count)`. Per entry, so that a signal handler's
    /// episode between the two never takes another's.
    pub(crate) spins: [Cell<(usize, u64)>; LAZY_DEPTH],
    /// Sites, direct-mapped by address, and at the same index the address of this
    /// thread's count of the site's episodes that returned without waiting; the counts
    /// live in the thread's `ThreadData`, which a report reads. Two arrays, not one of
    /// pairs: each is one load at a scaled index on the unwaited episode's exit.
    pub(crate) unwaited: [Cell<usize>; UNWAITED_CACHE],
    pub(crate) unwaited_counts: [Cell<usize>; UNWAITED_CACHE],
    /// Fast entries to close before the next one's hot path is timed (`record::lazy`,
    /// `HOT_SAMPLE`), and that one's tick at its first wait's entry with its start tick.
    pub(crate) hot_countdown: Cell<u32>,
    pub(crate) hot_entry: Cell<(u64, u64)>,
    /// Before the thread registers: the site addresses (0: a free entry) and counts of
    /// its episodes that returned without waiting (`record::unwaited`). The cache above
    /// points at `early_counts` for them, so a thread that never waits counts each on
    /// the fast path too.
    early_keys: [Cell<usize>; EARLY],
    early_counts: [AtomicU64; EARLY],
    /// The entry opened on the fast path (`record::lazy`), `NO_FAST` if none: its
    /// frame is its node's open count and the thread's current node, nothing more.
    pub(crate) fast: Cell<u32>,
    /// Its start tick, the page's switch count then and its node. The thread's
    /// current node stays the one around it: anything else that reaches the thread's
    /// state makes it a frame first (`record::fold`), and that frame becomes current.
    pub(crate) fast_start: Cell<u64>,
    pub(crate) fast_switches: Cell<u32>,
    pub(crate) fast_node: Cell<u32>,
    /// A timed call opened on the fast path (`record::lazy`): the address of its
    /// `CallSite` (0: none), its entry's place, its start tick and its length
    /// (`IN_CALL` while it runs). One at a time: while it is set no other opens there.
    pub(crate) call: Cell<usize>,
    pub(crate) call_at: Cell<u32>,
    pub(crate) call_start: Cell<u64>,
    pub(crate) call_ticks: Cell<u64>,
    /// The calls at that site before it, in the same entry: each added to the tree
    /// (not to the tally) as the next one opened (`record::lazy`).
    pub(crate) flushed: Cell<u32>,
    /// Whether the tree is behind the hot path: a fast entry open, or records not
    /// folded (`Local::catch_up`, which every other entry into the thread runs first).
    pub(crate) behind: Cell<bool>,
    /// `(parent node, site address, child node)`, direct-mapped by site number (a site
    /// address of 0: empty): the fast path's node without a walk of the tree. Cleared
    /// before the thread's `ThreadData` may go.
    pub(crate) nodes: [Cell<(u32, usize, u32)>; NODE_CACHE],
}

/// No entry is open on the fast path.
pub(crate) const NO_FAST: u32 = u32::MAX;
/// The length of the fast entry's call while it runs.
pub(crate) const IN_CALL: u64 = u64::MAX;
/// Nodes the fast path finds without walking the tree.
pub(crate) const NODE_CACHE: usize = 32;

/// Whether this thread has registered (`record::thread` made its `Local`).
pub(crate) fn registered() -> bool {
    SERIAL.get() != 0
}

thread_local! {
    /// This thread's serial once registered (0 before): readable without registering.
    pub(crate) static SERIAL: Cell<u64> = const { Cell::new(0) };
    pub(crate) static LAZY: Lazy = const {
        Lazy {
            depth: Cell::new(0),
            live: Cell::new(0),
            sites: [const { Cell::new(0) }; LAZY_DEPTH],
            slots: [const { Cell::new(0) }; LAZY_DEPTH],
            spins: [const { Cell::new((0, 0)) }; LAZY_DEPTH],
            unwaited: [const { Cell::new(0) }; UNWAITED_CACHE],
            unwaited_counts: [const { Cell::new(0) }; UNWAITED_CACHE],
            hot_countdown: Cell::new(0),
            hot_entry: Cell::new((0, 0)),
            early_keys: [const { Cell::new(0) }; EARLY],
            early_counts: [const { AtomicU64::new(0) }; EARLY],
            fast: Cell::new(NO_FAST),
            fast_start: Cell::new(0),
            fast_switches: Cell::new(0),
            fast_node: Cell::new(0),
            call: Cell::new(0),
            call_at: Cell::new(0),
            call_start: Cell::new(0),
            call_ticks: Cell::new(0),
            flushed: Cell::new(0),
            behind: Cell::new(false),
            nodes: [const { Cell::new((0, 0, 0)) }; NODE_CACHE],
        }
    };
}

/// Sites a thread counts episodes of before it registers; a further one registers it.
const EARLY: usize = 8;

impl Lazy {
    /// The early count of the site at `key`, its entry taken if new; `None` when the
    /// table is full.
    pub(crate) fn early_count(&self, key: usize) -> Option<&AtomicU64> {
        let free = self.early_keys.iter().position(|k| k.get() == 0);
        let at = self
            .early_keys
            .iter()
            .position(|k| k.get() == key)
            .or(free)?;
        self.early_keys[at].set(key);
        Some(&self.early_counts[at])
    }

    /// Whether the early table holds any entry.
    pub(crate) fn holds_early(&self) -> bool {
        self.early_keys.iter().any(|k| k.get() != 0)
    }

    /// Empties the early table into `add(site address, count)`, the cache's pointers
    /// into it first.
    pub(crate) fn take_early(&self, mut add: impl FnMut(usize, u64)) {
        self.unwaited.iter().for_each(|c| c.set(0));
        for (k, n) in self.early_keys.iter().zip(&self.early_counts) {
            match (k.replace(0), n.swap(0, Relaxed)) {
                (0, _) => {}
                (key, n) => add(key, n),
            }
        }
    }
}

/// This thread's [`Lazy`], without a closure: the hot path (`record::lazy`) reaches it
/// inline whatever the inliner makes of `LocalKey::with` around a larger body (it
/// outlined the fast open once, ~10 instructions more per episode).
#[inline(always)]
pub(crate) fn lazy() -> &'static Lazy {
    // SAFETY: a `const` thread-local without a destructor lives, in place, as long as
    // its thread, teardown included; `Lazy` is not `Sync`, so the reference never
    // leaves the thread and is never used after it.
    LAZY.with(|z| unsafe { &*(z as *const Lazy) })
}

/// The thread's `ThreadData` is going away: its counts may no longer be reached
/// through the cache, nor its nodes.
pub(crate) fn forget_unwaited_cache() {
    LAZY.with(|z| {
        z.unwaited.iter().for_each(|c| c.set(0));
        z.nodes.iter().for_each(|c| c.set((0, 0, 0)));
    });
}

/// Whether the tree is behind the hot path (`Lazy::behind`).
#[inline(always)]
pub(crate) fn behind() -> bool {
    LAZY.with(|z| z.behind.get())
}

/// Tag bit on an entry's site: a closure of the site's body (`enter_nested`), or an
/// episode already counted as skipped, which opens the site's frame but counts no
/// episode. Sites are aligned, so bit 0 is free.
pub(crate) const NESTED: usize = 1;

/// The site of an entry's key.
pub(crate) fn site_of(key: usize) -> &'static EpisodeSite {
    // SAFETY: `record::lazy::enter` stores only the address of a `&'static
    // EpisodeSite`, tagged in bit 0, in an entry.
    unsafe { &*((key & !NESTED) as *const EpisodeSite) }
}

/// The site of this thread's innermost pending episode, if any.
pub(crate) fn innermost_pending() -> Option<&'static EpisodeSite> {
    LAZY.with(|z| {
        let d = z.depth.get();
        (d > z.live.get() && d as usize <= LAZY_DEPTH)
            .then(|| site_of(z.sites[d as usize - 1].get()))
    })
}

/// One site's episodes on one thread that returned without waiting (`record::lazy`).
#[derive(Default)]
pub(crate) struct Unwaited {
    key: AtomicUsize,
    frame: AtomicU32,
    pub(crate) count: AtomicU64,
}

/// A thread's `Unwaited` per site: only the owner writes, any thread reads.
pub(crate) struct UnwaitedTable(Arena<Unwaited>);

impl UnwaitedTable {
    pub(crate) fn new(cap: u32) -> Self {
        UnwaitedTable(Arena::new(cap))
    }

    /// Owner only, as its thread registers: takes in the counts of `z`'s early table.
    pub(crate) fn take_early(&self, z: &Lazy) {
        z.take_early(|key, n| {
            if let Some(u) = self.entry(site_of(key)) {
                bump(&u.count, n);
            }
        });
    }

    /// Owner only: the entry of `site`, added on first use (a thread meets few sites,
    /// and the cache in `Lazy` holds most); `None` once the table is full.
    pub(crate) fn entry(&self, site: &'static EpisodeSite) -> Option<&Unwaited> {
        let key = site as *const EpisodeSite as usize;
        let known = (0..self.0.len())
            .map(|i| self.0.get(i))
            .find(|u| u.key.load(Relaxed) == key);
        if known.is_some() {
            return known;
        }
        let frame = site::frame_id(key, || site.info());
        let i = self.0.push(|u| {
            u.key.store(key, Relaxed);
            u.frame.store(frame, Relaxed);
        })?;
        Some(self.0.get(i))
    }

    /// The frame id of the entry.
    pub(crate) fn frame(u: &Unwaited) -> u32 {
        u.frame.load(Relaxed)
    }

    /// Per frame id, the episodes that returned without waiting (none left out).
    pub(crate) fn read(&self) -> Vec<(u32, u64)> {
        (0..self.0.len())
            .map(|i| self.0.get(i))
            .map(|u| (u.frame.load(Relaxed), u.count.load(Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}
