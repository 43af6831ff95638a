//! The perf mmap user page: a counter read without a syscall.
//!
//! `mmap` of one page of a perf event's fd maps the kernel's `struct
//! perf_event_mmap_page` for it. The kernel rewrites the page whenever the event is
//! scheduled in, bumping `lock` (a seqlock) around the update; a reader copies the
//! fields and retries if `lock` changed meanwhile. What the fields give:
//!
//! - `offset`: the count as of the last update. For a software event that only
//!   changes when the thread is switched (context switches, CPU migrations) that is
//!   the current count of the thread reading its own counter: it equalled `read()`
//!   exactly on the build VM, at ~2 ns per read against ~900 ns.
//! - With `cap_user_rdpmc` and a non-zero `index`, the live hardware counter is
//!   `offset` plus `rdpmc(index - 1)`, sign-extended from `pmc_width` bits.
//! - With `cap_user_time`, `time_offset`, `time_mult` and `time_shift` turn a TSC
//!   reading into the ns since the last update, so `time_enabled` and `time_running`
//!   can be brought up to now (`cap_user_time_short` first folds the TSC into the
//!   kernel's `time_cycles`/`time_mask` window). For a thread's own event,
//!   `time_enabled` is its on-CPU time while the event was enabled.
//!
//! Both capabilities are 0 on the build VM (no PMU, no stable-TSC clock export);
//! the arithmetic is unit-tested with recorded page values.

use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{compiler_fence, AtomicBool, Ordering::Relaxed, Ordering::SeqCst};

/// Set in a child made by `fork()`: the kernel does not copy perf mappings into a
/// child (`VM_DONTCOPY`), so there the forking thread's pages are gone. Reading one
/// would fault, and unmapping its address could hit another mapping.
static GONE: AtomicBool = AtomicBool::new(false);

/// Whether this is a child made by `fork()`, where switch counts stand still.
pub(crate) fn pages_gone() -> bool {
    GONE.load(Relaxed)
}

/// Called in a child made by `fork()`, before it runs anything else: every page
/// reads as zero from now on and is never unmapped.
pub(crate) fn forget_pages_after_fork() {
    GONE.store(true, Relaxed);
}

/// The head of `struct perf_event_mmap_page` (include/uapi/linux/perf_event.h), up to
/// the fields read here.
#[repr(C)]
struct Header {
    version: u32,
    compat_version: u32,
    lock: u32,
    index: u32,
    offset: i64,
    time_enabled: u64,
    time_running: u64,
    capabilities: u64,
    pmc_width: u16,
    time_shift: u16,
    time_mult: u32,
    time_offset: u64,
    time_zero: u64,
    size: u32,
    reserved_1: u32,
    time_cycles: u64,
    time_mask: u64,
}

const CAP_USER_RDPMC: u64 = 1 << 2;
const CAP_USER_TIME: u64 = 1 << 3;
const CAP_USER_TIME_SHORT: u64 = 1 << 5;

/// The fields of one consistent read of a page, and the raw hardware counter when it
/// was read with `rdpmc` inside the same seqlock window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PageRead {
    pub(crate) index: u32,
    pub(crate) offset: i64,
    pub(crate) time_enabled: u64,
    pub(crate) time_running: u64,
    pub(crate) capabilities: u64,
    pub(crate) pmc_width: u16,
    pub(crate) time_shift: u16,
    pub(crate) time_mult: u32,
    pub(crate) time_offset: u64,
    pub(crate) time_cycles: u64,
    pub(crate) time_mask: u64,
    /// `rdpmc(index - 1)`, when `cap_user_rdpmc` and `index` allowed it.
    pub(crate) pmc: Option<u64>,
}

impl PageRead {
    pub(crate) fn cap_user_rdpmc(&self) -> bool {
        self.capabilities & CAP_USER_RDPMC != 0
    }

    pub(crate) fn cap_user_time(&self) -> bool {
        self.capabilities & CAP_USER_TIME != 0
    }

    /// The counter's value: `offset`, plus the live hardware counter when one was read.
    pub(crate) fn count(&self) -> u64 {
        let live = match (self.pmc, self.pmc_width) {
            (Some(pmc), width @ 1..=64) => {
                // Sign-extend the `width`-bit counter, as the kernel's recipe does.
                let shift = 64 - u32::from(width);
                ((pmc << shift) as i64) >> shift
            }
            _ => 0,
        };
        self.offset.wrapping_add(live) as u64
    }

    /// `(time_enabled, time_running)` brought up to the TSC reading `tsc`; `None`
    /// without `cap_user_time`. `running` advances too when the event is on now: a
    /// software event of the reading thread, or a hardware one with a non-zero index.
    pub(crate) fn times_at(&self, tsc: u64, software: bool) -> Option<(u64, u64)> {
        if !self.cap_user_time() {
            return None;
        }
        let mut cyc = tsc;
        if self.capabilities & CAP_USER_TIME_SHORT != 0 {
            cyc = self
                .time_cycles
                .wrapping_add(cyc.wrapping_sub(self.time_cycles) & self.time_mask);
        }
        let shift = u32::from(self.time_shift).min(63);
        let mult = u64::from(self.time_mult);
        let quot = cyc >> shift;
        let rem = cyc & ((1u64 << shift) - 1);
        let delta = self
            .time_offset
            .wrapping_add(quot.wrapping_mul(mult))
            .wrapping_add(rem.wrapping_mul(mult) >> shift);
        let on = software || self.index != 0;
        Some((
            self.time_enabled.wrapping_add(delta),
            self.time_running.wrapping_add(if on { delta } else { 0 }),
        ))
    }
}

/// One mapped user page; unmapped when dropped. Only the thread that owns the counter
/// reads it: its `offset` is current only for the thread it counts.
pub(crate) struct UserPage {
    page: NonNull<Header>,
    len: usize,
}

impl UserPage {
    /// Maps the user page of the perf event `fd` (one page, no ring buffer).
    pub(crate) fn map(fd: RawFd) -> io::Result<UserPage> {
        // SAFETY: sysconf has no preconditions.
        let len = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .map_err(|_| io::Error::last_os_error())?;
        // SAFETY: a fresh read-only shared mapping of a perf fd; the kernel checks the fd.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let page = NonNull::new(p.cast::<Header>()).ok_or_else(io::Error::last_os_error)?;
        Ok(UserPage { page, len })
    }

    /// `offset` under the seqlock: a software event's count. ~1 ns.
    #[inline(always)]
    pub(crate) fn offset(&self) -> u64 {
        if GONE.load(Relaxed) {
            return 0;
        }
        let h = self.page.as_ptr();
        loop {
            // SAFETY: the page stays mapped while `self` lives; the kernel writes it
            // concurrently, hence volatile reads and the seqlock retry.
            unsafe {
                let seq = std::ptr::read_volatile(&(*h).lock);
                compiler_fence(SeqCst);
                let offset = std::ptr::read_volatile(&(*h).offset);
                compiler_fence(SeqCst);
                if std::ptr::read_volatile(&(*h).lock) == seq {
                    return offset as u64;
                }
            }
        }
    }

    /// Every field under the seqlock, with `rdpmc` inside the same window where the
    /// page allows it.
    pub(crate) fn read(&self) -> PageRead {
        if GONE.load(Relaxed) {
            return PageRead::default();
        }
        let h = self.page.as_ptr();
        loop {
            // SAFETY: as in `offset`.
            unsafe {
                let seq = std::ptr::read_volatile(&(*h).lock);
                compiler_fence(SeqCst);
                let mut r = PageRead {
                    index: std::ptr::read_volatile(&(*h).index),
                    offset: std::ptr::read_volatile(&(*h).offset),
                    time_enabled: std::ptr::read_volatile(&(*h).time_enabled),
                    time_running: std::ptr::read_volatile(&(*h).time_running),
                    capabilities: std::ptr::read_volatile(&(*h).capabilities),
                    pmc_width: std::ptr::read_volatile(&(*h).pmc_width),
                    time_shift: std::ptr::read_volatile(&(*h).time_shift),
                    time_mult: std::ptr::read_volatile(&(*h).time_mult),
                    time_offset: std::ptr::read_volatile(&(*h).time_offset),
                    time_cycles: std::ptr::read_volatile(&(*h).time_cycles),
                    time_mask: std::ptr::read_volatile(&(*h).time_mask),
                    pmc: None,
                };
                if r.cap_user_rdpmc() && r.index != 0 {
                    r.pmc = rdpmc(r.index - 1);
                }
                compiler_fence(SeqCst);
                if std::ptr::read_volatile(&(*h).lock) == seq {
                    return r;
                }
            }
        }
    }
}

impl Drop for UserPage {
    fn drop(&mut self) {
        if GONE.load(Relaxed) {
            return;
        }
        // SAFETY: the mapping was made in `map` with this length and is not used after.
        unsafe { libc::munmap(self.page.as_ptr().cast(), self.len) };
    }
}

/// The hardware counter `counter` of this CPU. The kernel allows it (CR4.PCE) exactly
/// when it sets `cap_user_rdpmc` for an event of this thread.
#[cfg(target_arch = "x86_64")]
fn rdpmc(counter: u32) -> Option<u64> {
    let (lo, hi): (u32, u32);
    // SAFETY: only called when the page's `cap_user_rdpmc` says RDPMC is allowed for
    // `index - 1`; RDPMC reads a register and touches no memory.
    unsafe {
        std::arch::asm!("rdpmc", in("ecx") counter, out("eax") lo, out("edx") hi,
            options(nomem, nostack, preserves_flags));
    }
    Some(u64::from(hi) << 32 | u64::from(lo))
}

#[cfg(not(target_arch = "x86_64"))]
fn rdpmc(_: u32) -> Option<u64> {
    None
}

/// The TSC, for [`PageRead::times_at`]; `None` where there is none.
pub(crate) fn tsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC exists on every x86_64 CPU and has no preconditions.
    return Some(unsafe { core::arch::x86_64::_rdtsc() });
    #[cfg(not(target_arch = "x86_64"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hardware `instructions` page as a kernel with a PMU and a stable TSC writes
    /// it (x86, 48-bit counters, a 2.1 GHz TSC: `time_mult`/2^`time_shift` = 1/2.1 ns).
    fn recorded_hw() -> PageRead {
        PageRead {
            index: 2,
            // The kernel stores `count - prev`, prev being the counter's last raw value
            // sign-extended from 48 bits: 0xffff_ffff_0000 is -0x1_0000.
            offset: 1_000_000 + 0x1_0000,
            time_enabled: 5_000_000,
            time_running: 4_000_000,
            capabilities: CAP_USER_RDPMC | CAP_USER_TIME | 0b10,
            pmc_width: 48,
            time_shift: 31,
            time_mult: 1_022_611_260,
            time_offset: (-2_000_000_000i64) as u64,
            time_cycles: 0,
            time_mask: 0,
            pmc: Some(0xffff_ffff_1000),
        }
    }

    #[test]
    fn a_hardware_count_is_the_offset_plus_the_sign_extended_pmc() {
        let r = recorded_hw();
        // 0xffff_ffff_1000 is -0xf000 in 48 bits: the counter moved 0x1000 since prev.
        assert_eq!(r.count(), 1_000_000 + 0x1000);
        // A counter that crossed zero (from -0x1_0000 to 0x10) still counts on.
        let wrapped = PageRead {
            pmc: Some(0x0000_0000_0010),
            ..r
        };
        assert_eq!(wrapped.count(), 1_000_000 + 0x1_0010);
        // Without rdpmc the offset alone is the count (a software event).
        let software = PageRead {
            index: 0,
            offset: 1014,
            pmc: None,
            capabilities: 0b10,
            ..r
        };
        assert_eq!(software.count(), 1014);
    }

    #[test]
    fn times_come_up_to_the_tsc_reading_with_the_kernels_recipe() {
        let r = recorded_hw();
        // 4.2e9 cycles at 2.1 GHz are 2 s: quot × mult + (rem × mult >> shift).
        let tsc = 4_200_000_000u64 + 2_100; // + 1 µs
        let (enabled, running) = r.times_at(tsc, false).unwrap();
        // delta = -2 s + 2 s + 1 µs = 1000 ns, less the ~2 ns the truncated
        // multiplier loses over 2 s.
        assert!((995..=1000).contains(&(enabled - 5_000_000)), "{enabled}");
        assert_eq!(running - 4_000_000, enabled - 5_000_000);
        // An event off the PMU (index 0) has not run since the update.
        let off = PageRead { index: 0, ..r };
        let (_, running) = off.times_at(tsc, false).unwrap();
        assert_eq!(running, 4_000_000);
        // A software event of this thread runs while the thread does.
        let (_, running) = off.times_at(tsc, true).unwrap();
        assert!(running > 4_000_000);
        // This VM: no cap_user_time, no figure.
        let vm = PageRead {
            capabilities: 0b10,
            ..r
        };
        assert_eq!(vm.times_at(tsc, true), None);
    }

    #[test]
    fn a_short_time_window_folds_the_tsc_first() {
        let r = PageRead {
            capabilities: CAP_USER_TIME | CAP_USER_TIME_SHORT,
            time_cycles: 0x1_0000,
            time_mask: 0xffff,
            time_shift: 0,
            time_mult: 1,
            time_offset: 0,
            ..PageRead::default()
        };
        // Only the low 16 bits past `time_cycles` count: 0x5_0010 → 0x1_0010.
        assert_eq!(r.times_at(0x5_0010, true), Some((0x1_0010, 0x1_0010)));
    }

    #[test]
    fn the_header_has_the_kernels_layout() {
        assert_eq!(std::mem::offset_of!(Header, lock), 8);
        assert_eq!(std::mem::offset_of!(Header, offset), 16);
        assert_eq!(std::mem::offset_of!(Header, capabilities), 40);
        assert_eq!(std::mem::offset_of!(Header, pmc_width), 48);
        assert_eq!(std::mem::offset_of!(Header, time_offset), 56);
        assert_eq!(std::mem::offset_of!(Header, time_cycles), 80);
        assert_eq!(std::mem::offset_of!(Header, time_mask), 88);
    }
}
