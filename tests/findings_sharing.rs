//! The false-sharing finding: a wait site that spins while reading a watched line that
//! two threads write at different offsets is named, with the fix; the same workload
//! with the counters 128 B apart is not. The two threads take turns through an
//! unwatched flag, so the interleaving is the same on any machine.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use yieldprof::report::{Costs, Rule};
use yieldprof::Watched;

#[repr(C, align(128))]
struct Turn(AtomicUsize);

#[repr(C, align(128))]
struct Padded(Watched<AtomicU64>);

/// Waits for this thread's turn, looking at its own counter meanwhile.
#[yieldprof::instrument_wait]
fn wait_turn_packed(turn: &Turn, me: usize, mine: &Watched<AtomicU64>) {
    while turn.0.load(Acquire) % 2 != me {
        std::hint::black_box(mine.load(Relaxed));
        std::hint::spin_loop();
    }
}

/// The same wait, for the padded layout (a site of its own).
#[yieldprof::instrument_wait]
fn wait_turn_padded(turn: &Turn, me: usize, mine: &Watched<AtomicU64>) {
    while turn.0.load(Acquire) % 2 != me {
        std::hint::black_box(mine.load(Relaxed));
        std::hint::spin_loop();
    }
}

type Wait = fn(&Turn, usize, &Watched<AtomicU64>);

fn take_turns(slots: [&Watched<AtomicU64>; 2], wait: Wait) {
    let turn = Turn(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for (me, mine) in slots.into_iter().enumerate() {
            let turn = &turn;
            s.spawn(move || {
                for _ in 0..2_000 {
                    wait(turn, me, mine);
                    mine.fetch_add(1, Relaxed);
                    turn.0.fetch_add(1, Release);
                }
            });
        }
    });
}

fn sharing_findings(site: &str) -> Vec<yieldprof::report::Finding> {
    yieldprof::snapshot()
        .findings(&Costs::current())
        .into_iter()
        .filter(|f| f.rule == Rule::FalseSharing && f.subject.ends_with(site))
        .collect()
}

#[test]
fn a_wait_site_on_a_falsely_shared_line_is_named_and_a_padded_one_is_not() {
    let packed = [Watched::new(0), Watched::new(0)];
    yieldprof::watch(&packed, "packed_counters");
    yieldprof::sharing::set_watch_sampling(1);
    take_turns([&packed[0], &packed[1]], wait_turn_packed);
    let found = sharing_findings("wait_turn_packed");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].evidence.contains("FALSE"), "{}", found[0].evidence);
    assert!(
        found[0].evidence.contains("`packed_counters"),
        "{}",
        found[0].evidence
    );
    assert!(found[0].fix.contains("128 B"), "{}", found[0].fix);

    let padded = [Padded(Watched::new(0)), Padded(Watched::new(0))];
    yieldprof::watch(&padded[0].0, "padded_a");
    yieldprof::watch(&padded[1].0, "padded_b");
    take_turns([&padded[0].0, &padded[1].0], wait_turn_padded);
    assert_eq!(sharing_findings("wait_turn_padded"), vec![]);
}
