//! Whether the calling thread was switched since it last asked, with one load and no
//! perf event: the source of "did I switch" (`counters::exact`) that `Options::rseq`
//! (`YIELDPROF_RSEQ=on`) asks for; by default the perf page.
//!
//! glibc (≥ 2.35) registers an rseq area for every thread. When a thread returns to
//! user space after it was switched out (or migrated, or signalled), the kernel looks
//! at the area's `rseq_cs` pointer and, where the thread is outside the critical
//! section it names, clears it. A thread that points `rseq_cs` at an empty section
//! ("armed") knows with one load whether it was switched since: the pointer is 0.
//! A per-thread perf event costs the kernel ~0.9–1.0 µs at every switch of its thread
//! on the build VM (2026-12-05, `docs/cost.md`); this costs ~30–65 ns.
//!
//! It is a bit, not a count: the count and its voluntary/involuntary split come from
//! getrusage after a switch (`Exact::switches`). The clearing is how the kernel
//! behaves, not a documented promise, so it is checked on a thread's first waits,
//! which are read on getrusage anyway (`LocalCounters::begin`/`finish`): the first
//! one getrusage saw switched must have cleared the bit ([`usable`]). Until one has,
//! or where one did not, the perf page is used as before.
//!
//! The section a thread points at is a static of this library: a yieldprof loaded
//! with `dlopen` and then unloaded would leave threads pointing at unmapped memory,
//! which the kernel answers with SIGSEGV at their next switch (not handled here).

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::OnceLock;

/// `struct rseq_cs` (include/uapi/linux/rseq.h): 32 bytes, 32-aligned.
#[repr(C, align(32))]
struct CriticalSection {
    version: u32,
    flags: u32,
    start_ip: u64,
    post_commit_offset: u64,
    abort_ip: u64,
}

/// The signature glibc registers, which the kernel checks in the 4 bytes before a
/// section's abort address (even one it never aborts to).
#[cfg(target_arch = "x86_64")]
const SIGNATURE: u32 = 0x5305_3053;
#[cfg(target_arch = "aarch64")]
const SIGNATURE: u32 = 0xd428_bc00;

/// The signature, and the abort address right after it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
static SIGNED: [u32; 2] = [SIGNATURE, 0];

/// The empty section every armed thread points at: it starts at the signature and
/// is 0 bytes long, so no instruction is ever inside it.
static SECTION: OnceLock<Option<CriticalSection>> = OnceLock::new();

/// Where the calling thread's `rseq_cs` is, relative to its thread pointer; `None`
/// where glibc registered no area (an older glibc, `glibc.pthread.rseq=0`).
static OFFSET: OnceLock<Option<isize>> = OnceLock::new();

/// Whether rseq is asked for (`Options::rseq`, `YIELDPROF_RSEQ`): else the page is
/// used and the area never touched. `UNSET` until the options or the settings say.
static WANTED: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = u8::MAX;

/// Sets whether threads registered afterwards may use rseq.
pub(crate) fn want(on: bool) {
    WANTED.store(u8::from(on), Relaxed);
}

fn wanted() -> bool {
    match WANTED.load(Relaxed) {
        UNSET => {
            let on = crate::config::settings().rseq;
            want(on);
            on
        }
        v => v == 1,
    }
}

/// What this process has seen: `UNKNOWN` until a watched wait was switched, then
/// `YES` where that cleared the bit, `NO` where it did not.
static VERDICT: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

/// One thread's armed bit.
pub(crate) struct Rseq {
    cs: *mut u64,
    section: u64,
}

impl Rseq {
    /// The calling thread's, armed; `None` where rseq is not usable here.
    pub(crate) fn here() -> Option<Rseq> {
        if !usable() {
            return None;
        }
        let r = Rseq::unchecked()?;
        r.arm();
        Some(r)
    }

    fn unchecked() -> Option<Rseq> {
        let offset = (*OFFSET.get_or_init(area_offset))?;
        let section = SECTION.get_or_init(section).as_ref()?;
        // `rseq_cs` follows `cpu_id_start` and `cpu_id` (u32 each).
        let cs = thread_pointer()?.wrapping_offset(offset + 8).cast::<u64>();
        Some(Rseq {
            cs,
            section: section as *const CriticalSection as u64,
        })
    }

    /// Points `rseq_cs` at the empty section: the next switch clears it.
    #[inline(always)]
    pub(crate) fn arm(&self) {
        // SAFETY: `cs` is this thread's registered rseq area (`Rseq` is made on and
        // kept by its thread); the kernel reads it only at this thread's return to user
        // space, and the section it names lives as long as the process.
        unsafe { std::ptr::write_volatile(self.cs, self.section) }
    }

    /// Whether no switch (nor migration or signal) came since the last `arm`.
    #[inline(always)]
    pub(crate) fn armed(&self) -> bool {
        // SAFETY: as in `arm`.
        unsafe { std::ptr::read_volatile(self.cs) == self.section }
    }
}

/// Whether a switch seen by getrusage has cleared the bit in this process.
pub(crate) fn usable() -> bool {
    VERDICT.load(Relaxed) == YES && wanted()
}

/// Arms the calling thread's bit while nothing is known: at the start of a wait read
/// on getrusage, before that read. A leftover armed pointer is harmless: the next
/// switch clears it.
pub(crate) fn watch() {
    if VERDICT.load(Relaxed) != UNKNOWN || !wanted() {
        return;
    }
    match Rseq::unchecked() {
        Some(r) => r.arm(),
        None => VERDICT.store(NO, Relaxed),
    }
}

/// The end of that wait, after its getrusage: `switched`, whether getrusage saw the
/// thread switched since [`watch`]. The first switched one decides.
pub(crate) fn judge(switched: bool) {
    if !switched || VERDICT.load(Relaxed) != UNKNOWN || !wanted() {
        return;
    }
    let verdict = match Rseq::unchecked() {
        Some(r) if !r.armed() => YES,
        _ => NO,
    };
    let _ = VERDICT.compare_exchange(UNKNOWN, verdict, Relaxed, Relaxed);
}

/// glibc's `__rseq_offset`, where `__rseq_size` says an area is registered; looked up
/// at run time, so a glibc without them still links.
fn area_offset() -> Option<isize> {
    // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names; the symbols, where
    // present, are glibc's `const ptrdiff_t __rseq_offset` and `const unsigned int
    // __rseq_size`.
    unsafe {
        let size = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr());
        let offset = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr());
        if size.is_null() || offset.is_null() || *size.cast::<u32>() < 16 {
            return None;
        }
        Some(*offset.cast::<isize>())
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn section() -> Option<CriticalSection> {
    let start = SIGNED.as_ptr() as u64;
    Some(CriticalSection {
        version: 0,
        flags: 0,
        start_ip: start,
        post_commit_offset: 0,
        abort_ip: start + 4,
    })
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn section() -> Option<CriticalSection> {
    None
}

#[cfg(target_arch = "x86_64")]
fn thread_pointer() -> Option<*mut u8> {
    let tp: *mut u8;
    // SAFETY: on x86_64 Linux `fs:0` holds the thread pointer (the TCB's self pointer).
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:0", out(reg) tp, options(nostack, readonly, preserves_flags))
    };
    Some(tp)
}

#[cfg(target_arch = "aarch64")]
fn thread_pointer() -> Option<*mut u8> {
    let tp: *mut u8;
    // SAFETY: reads the thread pointer register.
    unsafe {
        std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nostack, nomem, preserves_flags))
    };
    Some(tp)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn thread_pointer() -> Option<*mut u8> {
    None
}
