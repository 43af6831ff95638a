//! Hardware watchpoints on one thread: `perf_event_open` with `PERF_TYPE_BREAKPOINT`,
//! no PMU needed (the CPU's debug registers; 4 on x86).
//!
//! Each breakpoint traps on the thread's user-mode writes to `len` (1, 2, 4 or 8) bytes
//! at a byte-exact address and writes one sample (time and address) into a small ring
//! buffer the thread's breakpoints share. No signal is involved: the caller reads the
//! ring when it moves the breakpoints ([`Watchpoints::rearm`]), so nothing runs in the
//! watched thread but the kernel's trap, and no signal disposition of the host changes.
//!
//! Cost is bounded by the kernel's event limit (`PERF_EVENT_IOC_REFRESH`): a breakpoint
//! armed with a budget of `n` hits disables itself after the `n`-th, so a watched word
//! written a billion times a second costs `n` traps until it is moved. The limit left
//! from one arming carries over to the next, so each arming tops it up to `n`.

use super::*;
use perf_event::hooks::sys::{bindings as sys, ioctls, perf_event_open};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicI32, AtomicU64, Ordering};

/// Debug registers per thread on x86 (and most aarch64 cores): the most breakpoints
/// one thread gets.
pub(crate) const SLOTS: usize = 4;
/// One metadata page and two data pages.
const RING_PAGES: usize = 3;
const PAGE: usize = 4096;
/// A sample: header, time, address.
const SAMPLE_BYTES: usize = 24;
/// Most hits one breakpoint takes per arming: all of a thread's fit in its ring until
/// read. (A sample the ring has no room for is lost, its breakpoint's budget with it:
/// the kernel's limit would run out unseen, and the breakpoint be refreshed as a
/// zombie; measured, a budget of 50 with a one-page ring slowed the writer 6×.)
pub(crate) const MAX_BUDGET: u32 = ((RING_PAGES - 1) * PAGE / SAMPLE_BYTES / SLOTS) as u32;

/// When non-zero, every open fails with this errno: the tests' stand-in for a
/// container or seccomp profile without breakpoints.
static FORCED_ERRNO: AtomicI32 = AtomicI32::new(0);

/// Makes every later breakpoint open fail with `errno` (0: open them for real).
pub(crate) fn force_open_error(errno: i32) {
    FORCED_ERRNO.store(errno, Ordering::Relaxed);
}

/// Why breakpoints cannot be opened, from what `perf_event_open` said.
pub(crate) fn breakpoint_reason(errno: i32) -> Reason {
    match errno {
        libc::ENOSPC => Reason::NoDebugRegister,
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => Reason::NotSupported { errno },
        // Breakpoints count user mode only, as hardware counters do.
        _ => Reason::from_errno(errno, paranoid(), EventSource::PerfHardware),
    }
}

/// One write seen by a breakpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    /// `CLOCK_MONOTONIC` ns: orders hits of different threads.
    pub(crate) time_ns: u64,
    /// The breakpoint's address when it trapped.
    pub(crate) addr: usize,
}

/// Where one breakpoint watches: `len` bytes at `addr`, `len` 1, 2, 4 or 8 and `addr`
/// a multiple of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) addr: usize,
    pub(crate) len: usize,
}

struct Slot {
    fd: OwnedFd,
    attr: sys::perf_event_attr,
    /// Where it watches now, and the hits it may still take there.
    target: Target,
    left: u32,
    /// Enabled since its last parking.
    armed: bool,
    /// Its kernel limit ran out. The kernel then marks the breakpoint stopped for good:
    /// refreshed, it would trap on every write again but record none (measured: a
    /// thread's writes fell from 40 M/s to 0.05 M/s), so the next arming opens it anew.
    spent: bool,
}

/// The ring buffer one thread's breakpoints write to.
struct Ring {
    base: NonNull<u8>,
}

// SAFETY: the mapping is owned by the `Watchpoints` holding it; only `&mut` reads it.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        if !crate::base::fork::is_child() {
            // SAFETY: `base` is a live mapping of this size made in `open`; after a fork
            // the child has no copy (perf mappings are `VM_DONTCOPY`), so it is left.
            unsafe { libc::munmap(self.base.as_ptr().cast(), RING_PAGES * PAGE) };
        }
    }
}

/// Up to [`SLOTS`] write breakpoints on one thread, sharing the ring buffer of a dummy
/// event (which stays open while breakpoints are opened anew). Field order is drop
/// order: the mapping goes before the fds close.
pub(crate) struct Watchpoints {
    ring: Ring,
    slots: Vec<Slot>,
    owner: OwnedFd,
    tid: i32,
    lost: u64,
}

fn base_attr() -> sys::perf_event_attr {
    let mut a = sys::perf_event_attr {
        size: std::mem::size_of::<sys::perf_event_attr>() as u32,
        sample_type: (sys::PERF_SAMPLE_TIME | sys::PERF_SAMPLE_ADDR) as u64,
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    };
    a.set_disabled(1);
    a.set_exclude_kernel(1);
    a.set_exclude_hv(1);
    // Events sharing a ring must share a clock.
    a.set_use_clockid(1);
    a
}

fn attr_at(t: Target) -> sys::perf_event_attr {
    let mut a = base_attr();
    a.type_ = sys::PERF_TYPE_BREAKPOINT;
    a.bp_type = sys::HW_BREAKPOINT_W;
    a.sample_period = 1;
    a.bp_addr = t.addr as u64;
    a.bp_len = t.len as u64;
    a
}

fn last_error() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn ioctl_result(r: i32) -> Result<(), i32> {
    if r < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

fn open_event(attr: &mut sys::perf_event_attr, tid: i32) -> Result<OwnedFd, i32> {
    let forced = FORCED_ERRNO.load(Ordering::Relaxed);
    if forced != 0 {
        return Err(forced);
    }
    // SAFETY: `attr` is a valid, fully initialised attribute block.
    let fd = unsafe { perf_event_open(attr, tid, -1, -1, sys::PERF_FLAG_FD_CLOEXEC as _) };
    if fd < 0 {
        return Err(last_error());
    }
    // SAFETY: the fd was just returned to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Watchpoints {
    /// Opens up to `max` breakpoints (at most [`SLOTS`]) on thread `tid` of this
    /// process, all disabled, watching `first`. Fewer when the thread's debug
    /// registers run out after the first; the errno when not even one opens
    /// (`ESRCH`: the thread has exited).
    pub(crate) fn open(tid: i32, max: usize, first: Target) -> Result<Watchpoints, i32> {
        let mut dummy = base_attr();
        dummy.type_ = sys::PERF_TYPE_SOFTWARE;
        dummy.config = sys::PERF_COUNT_SW_DUMMY as u64;
        let owner = open_event(&mut dummy, tid)?;
        let ring = map_ring(&owner)?;
        let mut w = Watchpoints {
            ring,
            slots: Vec::with_capacity(max.min(SLOTS)),
            owner,
            tid,
            lost: 0,
        };
        while w.slots.len() < max.min(SLOTS) {
            match w.open_slot(first) {
                Ok(slot) => w.slots.push(slot),
                Err(e) if w.slots.is_empty() => return Err(e),
                // Out of debug registers: this thread gets fewer breakpoints.
                Err(_) => break,
            }
        }
        Ok(w)
    }

    fn open_slot(&self, target: Target) -> Result<Slot, i32> {
        let mut attr = attr_at(target);
        let fd = open_event(&mut attr, self.tid)?;
        // SAFETY: both fds are ours; the kernel checks that they may share a ring.
        ioctl_result(unsafe { ioctls::SET_OUTPUT(fd.as_raw_fd(), self.owner.as_raw_fd()) })?;
        Ok(Slot {
            fd,
            attr,
            target,
            left: 0,
            armed: false,
            spent: false,
        })
    }

    /// Breakpoints this thread got.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Samples the kernel dropped because the ring was full (never, within budgets).
    pub(crate) fn lost(&self) -> u64 {
        self.lost
    }

    /// Moves breakpoint `i` to `to` and enables it for `budget` hits (at most
    /// [`MAX_BUDGET`]). Call
    /// [`Watchpoints::park`] first, so that the hits read belong to the old targets.
    /// On an error the thread may have lost that breakpoint ([`Watchpoints::len`]).
    pub(crate) fn arm(&mut self, i: usize, to: Target, budget: u32) -> Result<(), i32> {
        if self.slots[i].spent {
            // Closed first: its debug register is the one the new event needs. When
            // the new one fails to open, the thread keeps one breakpoint fewer.
            drop(self.slots.swap_remove(i));
            let fresh = self.open_slot(to)?;
            self.slots.push(fresh);
            let last = self.slots.len() - 1;
            self.slots.swap(i, last);
        }
        let s = &mut self.slots[i];
        if s.target != to {
            s.attr.bp_addr = to.addr as u64;
            s.attr.bp_len = to.len as u64;
            // SAFETY: `attr` is the block the event was opened with, but for the
            // breakpoint fields, as the kernel requires.
            ioctl_result(unsafe { ioctls::MODIFY_ATTRIBUTES(s.fd.as_raw_fd(), &mut s.attr) })?;
            s.target = to;
        }
        // The kernel's limit still holds `left`: top it up to `budget`.
        let budget = budget.min(MAX_BUDGET);
        let add = budget.saturating_sub(s.left);
        // SAFETY: a plain ioctl on our fd.
        ioctl_result(unsafe { ioctls::REFRESH(s.fd.as_raw_fd(), add as i32) })?;
        s.left = s.left.max(budget);
        s.armed = true;
        Ok(())
    }

    /// Disables every breakpoint and appends the hits written since the last call to
    /// `hits`, oldest first, counting each against its breakpoint's budget. Those whose
    /// budget the ring shows spent are already off: disabling one of a running thread
    /// interrupts it, so they are left alone.
    pub(crate) fn park(&mut self, hits: &mut Vec<Hit>) {
        let from = hits.len();
        self.take_hits(hits);
        for s in self.slots.iter_mut().filter(|s| s.armed) {
            if !s.spent {
                // SAFETY: a plain ioctl on our fd. Synchronous: once it returns, every
                // hit of the breakpoint is in the ring.
                unsafe { ioctls::DISABLE(s.fd.as_raw_fd(), 0) };
            }
            s.armed = false;
        }
        self.take_hits(hits);
        hits[from..].sort_by_key(|h| h.time_ns);
    }

    fn take_hits(&mut self, hits: &mut Vec<Hit>) {
        let from = hits.len();
        let lost = self.ring.read(hits);
        self.lost += lost;
        if lost > 0 {
            // Whose budget the lost hits spent is unknown: open them all anew.
            for s in &mut self.slots {
                s.spent = true;
            }
        }
        for h in &hits[from..] {
            if let Some(s) = self.slots.iter_mut().find(|s| s.target.addr == h.addr) {
                s.left = s.left.saturating_sub(1);
                s.spent |= s.left == 0;
            }
        }
    }
}

fn map_ring(fd: &OwnedFd) -> Result<Ring, i32> {
    // SAFETY: a shared mapping of a perf fd, as perf_event_open(2) documents; the
    // result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            RING_PAGES * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(last_error());
    }
    NonNull::new(p.cast())
        .map(|base| Ring { base })
        .ok_or(libc::EINVAL)
}

/// `perf_event_header` types read here.
const RECORD_LOST: u32 = sys::PERF_RECORD_LOST;
const RECORD_SAMPLE: u32 = sys::PERF_RECORD_SAMPLE;

impl Ring {
    fn meta(&self) -> &sys::perf_event_mmap_page {
        // SAFETY: the first page of the mapping is the kernel's metadata page.
        unsafe { &*self.base.as_ptr().cast::<sys::perf_event_mmap_page>() }
    }

    /// Appends the samples not read yet; returns the samples the kernel lost.
    fn read(&mut self, hits: &mut Vec<Hit>) -> u64 {
        let meta = self.meta();
        let data_size = (RING_PAGES - 1) * PAGE;
        // SAFETY: `data_head` is written by the kernel; read it atomically, then
        // fence so the records it covers are read after it (perf_event_open(2)).
        let head = unsafe { &*(&meta.data_head as *const u64).cast::<AtomicU64>() }
            .load(Ordering::Acquire);
        let tail_cell = unsafe { &*(&meta.data_tail as *const u64).cast::<AtomicU64>() };
        let mut tail = tail_cell.load(Ordering::Relaxed);
        // SAFETY: the data area starts one page in and is `data_size` long.
        let data = unsafe { self.base.as_ptr().add(PAGE) };
        let word = |at: u64| -> u64 {
            let mut b = [0u8; 8];
            for (k, byte) in b.iter_mut().enumerate() {
                // SAFETY: the index is reduced modulo the data size (records wrap).
                *byte = unsafe { *data.add(((at + k as u64) % data_size as u64) as usize) };
            }
            u64::from_ne_bytes(b)
        };
        let mut lost = 0;
        while tail < head {
            let header = word(tail);
            let (kind, size) = (header as u32, (header >> 48) as u16 as u64);
            if size < 8 {
                break;
            }
            match kind {
                // time, addr: the order of `sample_type`'s bits.
                RECORD_SAMPLE if size >= 24 => hits.push(Hit {
                    time_ns: word(tail + 8),
                    addr: word(tail + 16) as usize,
                }),
                // id, lost
                RECORD_LOST if size >= 24 => lost += word(tail + 16),
                _ => {}
            }
            tail += size;
        }
        fence(Ordering::Release);
        tail_cell.store(head, Ordering::Release);
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::{mpsc, Arc};

    fn gettid() -> i32 {
        // SAFETY: no preconditions.
        unsafe { libc::gettid() }
    }

    #[test]
    fn a_breakpoint_sees_another_threads_writes_up_to_its_budget() {
        let data: Arc<[AtomicU64; 8]> = Arc::new(Default::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let writer = {
            let (data, stop) = (data.clone(), stop.clone());
            std::thread::spawn(move || {
                tx.send(gettid()).unwrap();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    data[(i % 2) as usize].store(i, Ordering::Relaxed);
                    i += 1;
                }
            })
        };
        let tid = rx.recv().unwrap();
        let at = |w: usize| Target {
            addr: &data[w] as *const AtomicU64 as usize,
            len: 8,
        };
        let mut wp = match Watchpoints::open(tid, 2, at(0)) {
            Ok(wp) => wp,
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                writer.join().unwrap();
                eprintln!("breakpoints unavailable here: {}", breakpoint_reason(e));
                return;
            }
        };
        assert_eq!(wp.len(), 2);
        // Whether the writer runs while a breakpoint is armed is the scheduler's: wait
        // (at most 5 s) until word `w` took `n` more writes after arming, each a larger
        // value (word 0 holds even counts, word 1 odd ones, 2 apart); else inconclusive.
        let wrote = |w: usize, n: u64| {
            let from = data[w].load(Ordering::Relaxed);
            let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while data[w].load(Ordering::Relaxed) < from + 2 * n {
                if std::time::Instant::now() > end {
                    return false;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            true
        };
        let inconclusive = |what: &str| {
            stop.store(true, Ordering::Relaxed);
            eprintln!("inconclusive: the writer did not run for 5 s while {what}");
        };
        let mut hits = Vec::new();
        for round in 0..3 {
            wp.arm(0, at(0), 3).unwrap();
            // Word 5 is never written: its budget carries over unspent.
            wp.arm(1, at(5), 3).unwrap();
            if !wrote(0, 3) {
                return inconclusive("armed on word 0");
            }
            hits.clear();
            wp.park(&mut hits);
            assert_eq!(hits.len(), 3, "round {round}: {hits:?}");
            assert!(hits.iter().all(|h| h.addr == at(0).addr));
            assert!(hits.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        }
        // Moved, the breakpoint sees the other word.
        wp.arm(0, at(1), 2).unwrap();
        if !wrote(1, 2) {
            return inconclusive("armed on word 1");
        }
        hits.clear();
        wp.park(&mut hits);
        assert_eq!(hits.len(), 2);
        assert!(hits.iter().all(|h| h.addr == at(1).addr));
        // Budgets past what the ring holds are capped: every hit is read, and each
        // arming sees its full budget again (a lost hit would leave a stopped
        // breakpoint refreshed, trapping unseen).
        for round in 0..3 {
            wp.arm(0, at(0), 10_000).unwrap();
            wp.arm(1, at(1), 10_000).unwrap();
            if !(wrote(0, u64::from(MAX_BUDGET)) && wrote(1, u64::from(MAX_BUDGET))) {
                return inconclusive("armed with the full budget");
            }
            hits.clear();
            wp.park(&mut hits);
            assert_eq!(hits.len(), 2 * MAX_BUDGET as usize, "round {round}");
        }
        assert_eq!(wp.lost(), 0);
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
    }

    #[test]
    fn a_forced_error_is_the_reason_given() {
        assert_eq!(breakpoint_reason(libc::ENOSPC), Reason::NoDebugRegister);
        assert!(matches!(
            breakpoint_reason(libc::EACCES),
            Reason::Denied { .. } | Reason::Paranoid { .. }
        ));
    }
}
