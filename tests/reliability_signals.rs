//! An annotated function called from a signal handler never aborts or blocks the host:
//! an entry that interrupts yieldprof's own code on that thread (its locks, its
//! counters, a node being added) is counted as skipped; the others are recorded. The
//! host is a child process, so a deadlock or abort there fails the test, not the run.

mod child_process;

use child_process::{run, temp_dir};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Signals sent to the recording thread.
const SIGNALS: u64 = 20_000;
/// How long the host may take before it counts as blocked: far above the ~2 s it takes
/// on a loaded 2-core machine.
const BLOCKED_AFTER: Duration = Duration::from_secs(120);

static HANDLED: AtomicU64 = AtomicU64::new(0);

/// One entry per call (a spin is counted in the episode, not entered on its own), so
/// episodes recorded and entries skipped add up to the calls.
#[yieldprof::instrument_wait]
fn in_handler() {
    std::hint::spin_loop();
}

extern "C" fn on_signal(_: libc::c_int) {
    HANDLED.fetch_add(1, Ordering::Relaxed);
    in_handler();
}

/// A recursion through two annotated functions: every stack is new, so the thread
/// keeps adding nodes (and taking the site table's lock) while the signals land.
#[yieldprof::instrument_wait]
fn left(depth: u32) {
    std::thread::yield_now();
    if depth > 0 {
        left(depth - 1);
        right(depth - 1);
    }
}

#[yieldprof::instrument_wait]
fn right(depth: u32) {
    std::hint::spin_loop();
    if depth > 0 {
        left(depth - 1);
        right(depth - 1);
    }
}

/// An allocator that calls annotated code while armed, as one that profiles itself
/// would: yieldprof allocates while adding a thread and its nodes, so this re-enters
/// it at known points, with no signal timing involved.
struct CallingBack;
static ARMED: AtomicBool = AtomicBool::new(false);
static CALLED_BACK: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

#[yieldprof::instrument_wait]
fn in_allocator() {
    std::hint::spin_loop();
}

// SAFETY: every call is forwarded to `System`, which upholds the contract.
unsafe impl GlobalAlloc for CallingBack {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if ARMED.load(Ordering::Relaxed) && !IN_CALLBACK.replace(true) {
            CALLED_BACK.fetch_add(1, Ordering::Relaxed);
            in_allocator();
            IN_CALLBACK.set(false);
        }
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
}

#[global_allocator]
static ALLOC: CallingBack = CallingBack;

#[yieldprof::instrument_wait]
fn outer() {
    std::thread::yield_now();
}

/// A thread whose first entry, and the nodes it adds, allocate with the allocator
/// armed.
fn allocator_host() {
    std::thread::spawn(|| {
        ARMED.store(true, Ordering::Relaxed);
        outer();
        ARMED.store(false, Ordering::Relaxed);
    })
    .join()
    .unwrap();
    let report = yieldprof::snapshot();
    let recorded = report.site("in_allocator").map_or(0, |s| s.episodes);
    let skipped: u64 = report.threads().iter().map(|t| t.reentries_skipped).sum();
    let called = CALLED_BACK.load(Ordering::Relaxed);
    println!("called {called} recorded {recorded} skipped {skipped}");
    print!("{}", report.summary());
}

fn host() {
    let guard = yieldprof::Options::from_env().name("signals").init();
    // SAFETY: `on_signal` is an `extern "C" fn(c_int)`; the sigaction is zeroed then filled.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() };
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..SIGNALS {
                // SAFETY: `me` is this scope's thread, alive until `done`.
                unsafe { libc::pthread_kill(me, libc::SIGUSR1) };
                std::thread::yield_now();
            }
            done.store(true, Ordering::Relaxed);
        });
        while !done.load(Ordering::Relaxed) {
            left(12);
        }
    });
    let report = yieldprof::snapshot();
    let recorded = report.site("in_handler").map_or(0, |s| s.episodes);
    let skipped: u64 = report.threads().iter().map(|t| t.reentries_skipped).sum();
    let handled = HANDLED.load(Ordering::Relaxed);
    println!("handled {handled} recorded {recorded} skipped {skipped}");
    print!("{}", report.summary());
    drop(guard);
}

fn watchdog() {
    // A blocked host must end, and say so.
    std::thread::spawn(|| {
        std::thread::sleep(BLOCKED_AFTER);
        eprintln!("blocked");
        // SAFETY: ends the process at once; nothing else can be relied on here.
        unsafe { libc::_exit(99) };
    });
}

#[test]
fn child() {
    let Some(role) = child_process::role() else {
        return;
    };
    watchdog();
    match role.as_str() {
        "signals" => host(),
        "allocator" => allocator_host(),
        other => panic!("unknown role {other}"),
    }
    std::process::exit(0);
}

/// The numbers after `prefix` on its line of `stdout` (`handled 3 recorded 2 skipped 1`).
fn figures(stdout: &str, prefix: &str) -> Vec<u64> {
    stdout
        .lines()
        .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
        .map(|l| l.split(' ').filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_default()
}

#[test]
fn entries_from_an_allocator_calling_back_into_yieldprof_are_skipped_and_reported() {
    let exit = run("allocator", &[]);
    assert_eq!(exit.code, Some(0), "{exit:?}");
    let [called, recorded, skipped] = figures(&exit.stdout, "called ")[..] else {
        panic!("{exit:?}")
    };
    // Registering the thread allocates inside yieldprof: those calls are skipped.
    assert!(skipped > 0, "{exit:?}");
    assert_eq!(recorded + skipped, called, "{exit:?}");
    let line = format!("{skipped} entries skipped: they interrupted yieldprof");
    assert!(exit.stdout.contains(&line), "{line:?} not in {exit:?}");
}

#[test]
fn an_annotated_fn_in_a_signal_handler_is_recorded_or_counted_as_skipped_never_aborts() {
    let dir = temp_dir("signals");
    let exit = run(
        "signals",
        &[
            ("YIELDPROF_OUT", dir.to_str().unwrap()),
            // Every episode reads its counters: the counters' own state is in use
            // around each one.
            ("YIELDPROF_COUNTERS_EVERY", "1"),
            // Room for every stack, so no handler episode lands in `[overflow]`.
            ("YIELDPROF_MAX_NODES", "262144"),
        ],
    );
    assert_eq!(exit.code, Some(0), "{exit:?}");
    let [handled, recorded, skipped] = figures(&exit.stdout, "handled ")[..] else {
        panic!("{exit:?}")
    };
    assert!(handled > 0, "{exit:?}");
    assert_eq!(recorded + skipped, handled, "{exit:?}");
    if skipped > 0 {
        let line = format!("{skipped} entries skipped");
        assert!(exit.stdout.contains(&line), "{line:?} not in {exit:?}");
        let json = std::fs::read_to_string(dir.join("signals.json")).unwrap();
        assert!(
            json.contains(&format!("\"reentries_skipped\": {skipped}")),
            "{json}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
