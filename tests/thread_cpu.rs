//! A thread's CPU time in a report (`ThreadStats::cpu_ns`) is the kernel's: the
//! thread's own CPU clock (`CLOCK_THREAD_CPUTIME_ID`) over its recorded life, read
//! from another thread while it lives, kept from its exit once it exited, and the
//! difference in a window between two snapshots. The summary sets the profiler's own
//! time against it. CPU time, not wall: load on the machine moves when the thread
//! runs, not how much it runs, so the bounds hold on a loaded machine.

mod clocks;

use std::sync::mpsc::channel;
use std::sync::Mutex;
use std::time::Duration;
use yieldprof::report::ThreadStats;

/// What the thread runs between the reads: well above the bound below.
const BURN: Duration = Duration::from_millis(20);

/// The thread's CPU outside the two clocks' common window: its registration (at its
/// first record, after its clock's first read) and its exit (after its last), a few
/// hundred µs in an unoptimised build; and a live read's lag behind the thread's send.
const SLACK_NS: u64 = 2_000_000;

#[yieldprof::instrument_wait]
fn nap() {
    std::thread::sleep(Duration::from_micros(100));
}

/// Runs `d` of the thread's own CPU time.
fn burn(d: Duration) {
    let end = clocks::cpu_ns() + d.as_nanos() as u64;
    while clocks::cpu_ns() < end {
        std::hint::spin_loop();
    }
}

/// The tests take turns: the second's 80 threads could push the burner out of the
/// summary's 64 rows.
static TURNS: Mutex<()> = Mutex::new(());

fn burner(p: &yieldprof::Profile) -> ThreadStats {
    p.threads()
        .into_iter()
        .find(|t| t.name == "burner")
        .expect("the burner's row")
}

fn near(what: &str, shown: Option<u64>, truth: u64) {
    let shown = shown.unwrap_or_else(|| panic!("{what}: no CPU time shown"));
    eprintln!("{what}: {shown} ns shown, {truth} ns by the thread's clock");
    assert!(
        shown.abs_diff(truth) <= SLACK_NS,
        "{what}: {shown} ns shown, {truth} ns by the thread's clock"
    );
}

#[test]
fn a_threads_cpu_time_is_its_cpu_clocks_live_exited_and_in_a_window() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let (to_main, from_burner) = channel();
    let (to_burner, from_main) = channel::<()>();
    let burner_thread = std::thread::Builder::new()
        .name("burner".into())
        .spawn(move || {
            let c0 = clocks::cpu_ns();
            nap();
            burn(BURN);
            to_main.send(clocks::cpu_ns() - c0).unwrap();
            from_main.recv().unwrap();
            burn(BURN);
            nap();
            to_main.send(clocks::cpu_ns() - c0).unwrap();
            from_main.recv().unwrap();
            burn(BURN);
            clocks::cpu_ns() - c0
        })
        .unwrap();

    // Read while the thread lives, blocked in `recv`.
    let first = from_burner.recv().unwrap();
    let before = yieldprof::snapshot();
    let live = burner(&before);
    near("live", live.cpu_ns, first);
    assert!(live.cpu_ns.unwrap() < live.wall_ns);
    to_burner.send(()).unwrap();

    let second = from_burner.recv().unwrap();
    let after = yieldprof::snapshot();
    near(
        "window",
        burner(&after.since(&before)).cpu_ns,
        second - first,
    );
    to_burner.send(()).unwrap();

    // Kept from its exit: its tid (and its clock) are gone by the report.
    let last = burner_thread.join().unwrap();
    let ended = yieldprof::snapshot();
    let exited = burner(&ended);
    assert!(exited.exited);
    near("exited", exited.cpu_ns, last);

    // The JSON and the summary's row say the same figure.
    let json = ended.json(&yieldprof::report::Costs::current());
    let row = json.threads.iter().find(|t| t.name == "burner").unwrap();
    assert_eq!(row.cpu_ns, exited.cpu_ns);
    let summary = ended.summary();
    assert!(summary.contains("CPU %"), "no CPU column:\n{summary}");
    let share = format!(
        "{:.1}%",
        100.0 * exited.cpu_ns.unwrap() as f64 / exited.wall_ns as f64
    );
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with("burner (exited)"));
    assert!(
        line.is_some_and(|l| l.split_whitespace().any(|w| w == share)),
        "the burner's row has no CPU share {share}:\n{summary}"
    );
    assert!(
        summary.contains("of their CPU time"),
        "the profiler's own time is not set against the threads' CPU:\n{summary}"
    );
}

/// More threads than the summary lists one by one (64): the profiler line's shares are
/// of every thread's wall and CPU, as its own time is (over the 64 listed, flume's
/// 20 000 threads read 102 % of their CPU, 70.5 % of all threads', 2026-12-06).
#[test]
fn the_profiler_lines_shares_are_of_every_thread() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let before = yieldprof::snapshot();
    let threads: Vec<_> = (0..80)
        .map(|i| {
            std::thread::spawn(move || {
                nap();
                // Uneven lives, so that the 64 longest are not all of them alike.
                burn(Duration::from_micros(50 * (i % 8)));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let p = yieldprof::snapshot().since(&before);
    let all = p.threads();
    assert!(all.len() > 64, "{} threads", all.len());
    let own = p.profiler_time().total_ns() as f64;
    let wall: u64 = all.iter().map(|t| t.wall_ns).sum();
    let cpu: u64 = all.iter().map(|t| t.cpu_ns.unwrap()).sum();
    let line = p
        .summary()
        .lines()
        .find(|l| l.contains("profiler's own time:"))
        .expect("the profiler line")
        .to_owned();
    let expected = format!(
        "{:.2}% of the threads' wall, {:.1}% of their CPU time",
        100.0 * own / wall as f64,
        100.0 * own / cpu as f64
    );
    eprintln!("{line}");
    assert!(line.contains(&expected), "{line}\nexpected {expected}");
}
