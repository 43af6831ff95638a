//! Whether the calling thread was switched since it last asked, with one load and no
//! perf event: the default source of "did I switch" (`counters::exact`).
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
//! behaves, not a documented promise, so [`usable`] checks it once per process
//! (a nap must clear it, and getrusage must see the switch); where it does not hold,
//! the perf page is used as before.

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

/// Whether arming works here, checked once per process.
static USABLE: OnceLock<bool> = OnceLock::new();

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

/// Whether rseq arming tells switches here: checked once, on the calling thread, with
/// a nap (~60 µs, a voluntary switch) that must clear it.
pub(crate) fn usable() -> bool {
    *USABLE.get_or_init(|| {
        let Some(r) = Rseq::unchecked() else {
            return false;
        };
        let before = voluntary();
        r.arm();
        // SAFETY: usleep has no memory preconditions.
        unsafe { libc::usleep(1) };
        let cleared = !r.armed();
        let switched = voluntary() != before;
        // A leftover armed pointer is harmless: the next switch clears it.
        cleared && switched
    })
}

fn voluntary() -> i64 {
    let mut ru = super::zeroed_rusage();
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD reads this thread.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_nvcsw
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
    unsafe { std::arch::asm!("mov {}, qword ptr fs:0", out(reg) tp, options(nostack, readonly, preserves_flags)) };
    Some(tp)
}

#[cfg(target_arch = "aarch64")]
fn thread_pointer() -> Option<*mut u8> {
    let tp: *mut u8;
    // SAFETY: reads the thread pointer register.
    unsafe { std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nostack, nomem, preserves_flags)) };
    Some(tp)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn thread_pointer() -> Option<*mut u8> {
    None
}
