//! Watched lines: the registered ranges and their names, and the records of lines no longer watched.

use super::fields::Field;
use super::*;
use crate::base::fork::{ForkMutex, Locked};
use std::sync::atomic::Ordering::{Relaxed, Release};

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct HotRecord {
    pub(super) invalidations: u64,
    pub(super) false_inv: u64,
    pub(super) contended: u64,
    pub(super) by_granule: [u64; GRANULES],
}

/// A line's counters copied out of its slot, live or retired.
#[derive(Clone, Debug)]
pub(super) struct LineRecord {
    pub(super) line: usize,
    pub(super) since: u64,
    pub(super) until: u64,
    pub(super) fields: Vec<Field>,
    pub(super) owners: [u64; OWNED_THREADS],
    /// Tracked reads and writes by thread block and granule.
    pub(super) rw: [[[u64; 2]; GRANULES]; BLOCKS],
    /// Ticks of each block's first and last tracked access (0: none).
    pub(super) times: [(u64, u64); BLOCKS],
    pub(super) frames: Vec<(u32, u64)>,
    pub(super) hot: HotRecord,
    pub(super) pair: HotRecord,
    pub(super) sample_every: u32,
}

pub(super) struct LiveLine {
    pub(super) line: usize,
    pub(super) slot: usize,
    pub(super) since: u64,
}

pub(super) struct WatchedLines {
    pub(super) fields: Vec<Field>,
    pub(super) live: Vec<LiveLine>,
    pub(super) retired: Vec<LineRecord>,
    pub(super) seq: u64,
    pub(super) warned_full: bool,
}

pub(super) fn watched_lines() -> Locked<WatchedLines> {
    static WATCHED_LINES: ForkMutex<WatchedLines> = ForkMutex::new(
        WatchedLines {
            fields: Vec::new(),
            live: Vec::new(),
            retired: Vec::new(),
            seq: 0,
            warned_full: false,
        },
        |_| (),
    );
    WATCHED_LINES.lock()
}

pub(super) fn lines_of(addr: usize, size: usize) -> impl Iterator<Item = usize> {
    let first = addr & !(LINE - 1);
    let last = (addr + size.max(1) - 1) & !(LINE - 1);
    (first..=last).step_by(LINE)
}

impl WatchedLines {
    fn copy(&self, l: &LiveLine, until: u64) -> LineRecord {
        let s = &TABLE[l.slot];
        let mut frames: Vec<(u32, u64)> = Vec::new();
        for t in &s.threads {
            for (f, r) in t.frames.iter().zip(&t.frame_reads) {
                let f = f.load(Relaxed);
                if f != 0 {
                    frames.push((f - 1, r.load(Relaxed)));
                }
            }
        }
        LineRecord {
            line: l.line,
            since: l.since,
            until,
            fields: self
                .fields
                .iter()
                .filter(|f| f.overlaps(l.line, LINE))
                .cloned()
                .collect(),
            owners: std::array::from_fn(|i| s.meta.owners[i].load(Relaxed)),
            rw: std::array::from_fn(|b| {
                std::array::from_fn(|w| {
                    std::array::from_fn(|op| s.threads[b].rw[w][op].load(Relaxed))
                })
            }),
            times: std::array::from_fn(|b| {
                let t = &s.threads[b];
                (t.first.load(Relaxed), t.last.load(Relaxed))
            }),
            frames,
            hot: s
                .threads
                .iter()
                .map(|t| t.tally.record())
                .fold(HotRecord::default(), |a, b| HotRecord {
                    invalidations: a.invalidations + b.invalidations,
                    false_inv: a.false_inv + b.false_inv,
                    contended: a.contended + b.contended,
                    by_granule: std::array::from_fn(|g| a.by_granule[g] + b.by_granule[g]),
                }),
            pair: s.pair.tally.record(),
            sample_every: sample_every(),
        }
    }

    /// Moves `line` out of the table into `retired` (unless nothing touched it).
    fn retire_line(&mut self, line: usize) {
        let Some(pos) = self.live.iter().position(|l| l.line == line) else {
            return;
        };
        self.seq += 1;
        let rec = self.copy(&self.live[pos], self.seq);
        let gone = self.live.swap_remove(pos);
        KEYS[gone.slot].store(TOMBSTONE, Release);
        if let Some(p) = self.live.iter().find(|l| l.line == line ^ LINE) {
            TABLE[p.slot].meta.partner.store(0, Relaxed);
        }
        if rec.rw.iter().flatten().flatten().all(|&n| n == 0) {
            return;
        }
        if self.retired.len() >= RETIRED_CAP {
            let drop_at = self
                .retired
                .iter()
                .position(|r| r.hot.invalidations < MIN_INVALIDATIONS)
                .unwrap_or(0);
            self.retired.remove(drop_at);
        }
        self.retired.push(rec);
    }

    /// Drops fields whose value is gone once no live line needs their name.
    fn prune(&mut self) {
        let live = &self.live;
        self.fields.retain(|f| {
            !f.gone || lines_of(f.addr, f.size).any(|l| live.iter().any(|x| x.line == l))
        });
    }

    /// The value at `[addr, addr + size)` is going away: its lines retire once no
    /// live field covers them.
    fn forget(&mut self, addr: usize, size: usize) {
        let mut lines = Vec::new();
        for f in self.fields.iter_mut().filter(|f| f.overlaps(addr, size)) {
            f.gone = true;
            lines.extend(lines_of(f.addr, f.size));
        }
        for line in lines {
            if !self
                .fields
                .iter()
                .any(|f| !f.gone && f.overlaps(line, LINE))
            {
                self.retire_line(line);
            }
        }
        self.prune();
    }

    fn insert_line(&mut self, line: usize) -> bool {
        if self.live.iter().any(|l| l.line == line) {
            return true;
        }
        let h = home(line);
        let Some(slot) = (0..PROBES)
            .map(|p| (h + p) & (MAX_LINES - 1))
            .find(|&i| matches!(KEYS[i].load(Relaxed), EMPTY_KEY | TOMBSTONE))
        else {
            return false;
        };
        let s = &TABLE[slot];
        s.reset();
        if let Some(p) = self.live.iter().find(|l| l.line == line ^ LINE) {
            s.meta.partner.store(p.slot as u32 + 1, Relaxed);
            TABLE[p.slot].meta.partner.store(slot as u32 + 1, Relaxed);
            // The block's history starts afresh with both halves watched.
            let even = if line & LINE == 0 { s } else { &TABLE[p.slot] };
            even.pair.reset();
        }
        self.seq += 1;
        self.live.push(LiveLine {
            line,
            slot,
            since: self.seq,
        });
        // Release: a thread that finds the key sees the zeroed slot.
        KEYS[slot].store(line, Release);
        true
    }
}

/// Registers `[addr, addr + size)` under `name`, a value of type `type_name`. A range
/// overlapping an earlier one replaces it: that memory now holds a new object.
pub(crate) fn register(addr: usize, size: usize, name: &str, type_name: &str) {
    let size = size.max(1);
    let mut r = watched_lines();
    if SAMPLE_EVERY.load(Relaxed) == 0 {
        set_watch_sampling(crate::config::settings().watch_sample);
    }
    // What was counted on these lines belongs to whatever was watched there before.
    let lines: Vec<usize> = lines_of(addr, size).collect();
    for &l in &lines {
        r.retire_line(l);
    }
    r.fields.retain(|f| !f.overlaps(addr, size));
    r.prune();
    r.fields.push(Field::new(addr, size, name, type_name));
    let inserted = lines.iter().all(|&l| r.insert_line(l));
    if !inserted && !r.warned_full {
        r.warned_full = true;
        eprintln!(
            "yieldprof: watch({name:?}): the table of {MAX_LINES} watched lines is full; \
             accesses to it are not tracked"
        );
    }
    ACTIVE.store(true, Relaxed);
}

/// Ends the watch of `[addr, addr + size)` (its object is going away); the lines it
/// leaves uncovered keep their counts for the report.
pub(crate) fn forget(addr: usize, size: usize) {
    if !ACTIVE.load(Relaxed) {
        return;
    }
    if lines_of(addr, size).all(|l| lookup(l).is_none()) {
        return;
    }
    watched_lines().forget(addr, size);
}

pub(super) fn records() -> Vec<LineRecord> {
    let r = watched_lines();
    let mut out = r.retired.clone();
    out.extend(r.live.iter().map(|l| r.copy(l, u64::MAX)));
    out
}
