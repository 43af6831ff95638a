//! `Mark` arithmetic: exact and apportioned episodes.
use super::*;

#[test]
fn a_delta_is_the_difference_of_two_marks_across_a_wrap() {
    let a = Mark {
        switches: u32::MAX - 1,
        voluntary: u32::MAX,
        involuntary: 7,
        migrations: 1,
        off_ns: 1_000,
        queued_ns: 50,
        ..Mark::ZERO
    };
    let b = Mark {
        switches: 3,
        voluntary: 3,
        involuntary: 8,
        migrations: 1,
        off_ns: 201_000,
        queued_ns: 1_050,
        ..Mark::ZERO
    };
    assert_eq!(
        a.until(&b),
        Delta {
            voluntary: 4,
            involuntary: 1,
            switches: 5,
            migrations: 0,
            off_ns: 200_000,
            queued_ns: 1_000,
        }
    );
    assert_eq!(b.since(&a), a.until(&b));
}

/// A read at switch count 10: 5 voluntary, 5 involuntary, 1 µs off the CPU.
const READ: Mark = Mark {
    switches: 10,
    voluntary: 5,
    involuntary: 5,
    off_ns: 1_000,
    mono_ns: 1_000_000,
    ..Mark::ZERO
};

#[test]
fn a_switch_after_the_episode_leaves_its_count_exact_and_its_split_apportioned() {
    let start = READ;
    // The episode blocked once (count 10 -> 11); then its thread was preempted.
    let now = Mark {
        switches: 12,
        voluntary: 6,
        involuntary: 6,
        migrations: 1,
        off_ns: 41_000,
        mono_ns: 1_100_000,
        queued_ns: 10_000,
        ..Mark::ZERO
    };
    let (d, exact) = start.until_count(11, &now, 15_000, None);
    assert!(!exact);
    assert_eq!((d.switches, d.voluntary, d.involuntary), (1, 1, 0));
    // Queued: the window's by its share of switches, 10 000 × 1 / 2 (its blocked
    // time, 30 000 by its voluntary switch, plus that, capped at its wall).
    assert_eq!((d.off_ns, d.queued_ns, d.migrations), (15_000, 5_000, 1));
    let (d, exact) = start.until_count(12, &now, u64::MAX, None);
    assert!(exact);
    assert_eq!(d, start.until(&now));
}

/// An episode that began unread where others ended (another call than theirs, no read
/// between) is apportioned from the same read as they are: the voluntary switches go
/// to the earlier ones first, and none is counted twice.
#[test]
fn episodes_apportioned_from_one_read_never_count_a_switch_twice() {
    let read = READ;
    // One voluntary and three involuntary switches since the read: the first episode
    // 10 -> 12, the second from there to 13, one more after it.
    let now = Mark {
        switches: 14,
        voluntary: 6,
        involuntary: 8,
        off_ns: 41_000,
        mono_ns: 1_100_000,
        ..read
    };
    let (first, _) = read.until_count(12, &now, 20_000, None);
    let (second, exact) = read.unread_at(12).until_count(13, &now, 20_000, None);
    assert!(!exact);
    assert_eq!((first.voluntary, first.involuntary), (1, 1));
    assert_eq!((second.voluntary, second.involuntary), (0, 1));
    // With the split read at 12 (a close), the second's start is counted: its window
    // is its own, and the voluntary switch there is not the first's.
    let split = Mark {
        voluntary: 5,
        involuntary: 7,
        split_ahead: 0,
        ..read.unread_at(12)
    };
    let (second, _) = split.until_count(13, &now, 20_000, None);
    assert_eq!((second.voluntary, second.involuntary), (1, 0));
}

/// The sequence CI met: a yield whose split was read at its close (involuntary,
/// 11 -> 12), a voluntary switch outside any episode (a `recv`, 12 -> 13), then a lock
/// opened unread that blocked (13 -> 14), its split read at its close. From the read
/// before the yield, the lock's window had two voluntary switches, both supposed the
/// yield's and the `recv`'s: the lock's block counted involuntary, one more in waits
/// than the thread made. From the yield's split, only the `recv` came before it.
#[test]
fn an_unread_mark_takes_the_split_of_the_last_close_and_its_block_stays_voluntary() {
    let read = Mark {
        switches: 11,
        voluntary: 0,
        involuntary: 11,
        ..READ
    };
    let now = Mark {
        switches: 14,
        voluntary: 2,
        involuntary: 12,
        ..read
    };
    let lock_close = Split {
        at: 14,
        voluntary: 2,
        involuntary: 12,
    };
    let from_read = read.unread_at(13);
    let (d, _) = from_read.until_count(14, &now, 20_000_000, Some(lock_close));
    assert_eq!(
        (d.voluntary, d.involuntary),
        (0, 1),
        "the read's split guesses"
    );
    // `Exact::unread_at` with the yield's split, read at 12.
    let from_yield = Mark {
        voluntary: 0,
        involuntary: 12,
        split_ahead: 1,
        ..from_read
    };
    let (d, exact) = from_yield.until_count(14, &now, 20_000_000, Some(lock_close));
    assert!(!exact);
    assert_eq!((d.switches, d.voluntary, d.involuntary), (1, 1, 0));
}

#[test]
fn a_split_read_at_the_close_keeps_a_later_voluntary_switch_out_of_the_episode() {
    let start = Mark {
        switches: 10,
        voluntary: 5,
        involuntary: 5,
        off_ns: 1_000,
        ..Mark::ZERO
    };
    // Preempted in the episode (10 -> 11), then blocked in the thread's own code
    // (a join) before the figures were read.
    let now = Mark {
        switches: 12,
        voluntary: 6,
        involuntary: 6,
        ..start
    };
    let (guessed, _) = start.until_count(11, &now, 15_000, None);
    assert_eq!((guessed.voluntary, guessed.involuntary), (1, 0));
    let at_close = Split {
        at: 11,
        voluntary: 5,
        involuntary: 6,
    };
    let (d, exact) = start.until_count(11, &now, 15_000, Some(at_close));
    assert!(!exact, "the time split is still apportioned");
    assert_eq!((d.switches, d.voluntary, d.involuntary), (1, 0, 1));
    // A split read at another count says nothing of this episode.
    let elsewhere = Split { at: 12, ..at_close };
    let (d, _) = start.until_count(11, &now, 15_000, Some(elsewhere));
    assert_eq!((d.voluntary, d.involuntary), (1, 0));
}

#[test]
fn a_short_switch_after_a_long_episode_leaves_it_its_own_off_cpu_time() {
    let ms = 1_000_000;
    let start = Mark {
        switches: 10,
        ..Mark::ZERO
    };
    // 30 preemptions, 380 ms off the CPU in a 400 ms episode; then one of 0.1 ms
    // before the read, 0.2 ms after the episode's end.
    let now = Mark {
        switches: 41,
        involuntary: 31,
        off_ns: 380 * ms + ms / 10,
        mono_ns: 400 * ms + ms / 5,
        queued_ns: 380 * ms + ms / 10,
        ..start
    };
    let (d, exact) = start.until_count(40, &now, 400 * ms, None);
    assert!(!exact);
    assert_eq!((d.switches, d.involuntary), (30, 30));
    // The share of the switches alone would say 367.8 ms.
    assert_eq!(d.off_ns, 380 * ms - ms / 10);
}

/// A read preempted twice for 3 ms in all: from a mark taken before the read, the
/// figures taken back to the read's start see none of it, and an episode that began
/// before the read and ends at a later mark gets it all, switches and time.
#[test]
fn a_read_preempted_in_it_goes_back_to_where_it_began() {
    let ms = 1_000_000;
    let read = Mark {
        switches: 12,
        voluntary: 4,
        involuntary: 8,
        off_ns: 10 * ms,
        mono_ns: 50 * ms,
        queued_ns: 7 * ms,
        ..Mark::ZERO
    };
    let back = read.before_read(10, 3 * ms);
    assert_eq!(
        (back.switches, back.voluntary, back.involuntary),
        (10, 4, 6)
    );
    assert_eq!(
        (back.off_ns, back.mono_ns, back.queued_ns),
        (7 * ms, 47 * ms, 4 * ms)
    );
    let end = Mark {
        switches: 13,
        voluntary: 5,
        off_ns: 15 * ms,
        mono_ns: 60 * ms,
        ..read
    };
    assert_eq!(
        back.until(&end),
        Delta {
            voluntary: 1,
            involuntary: 2,
            switches: 3,
            migrations: 0,
            off_ns: 8 * ms,
            queued_ns: 3 * ms,
        }
    );
}

/// A pool worker's sleep (blocked 300 µs, woken 5 µs late) read after the job that
/// followed it was preempted (20 µs queued): the sleep's off-CPU time is its block
/// and a share of the time queued, not half the window's by count.
#[test]
fn time_blocked_goes_with_the_voluntary_switches_and_time_queued_with_all() {
    let us = 1_000;
    let start = READ;
    let now = Mark {
        switches: 12,
        voluntary: 6,
        involuntary: 6,
        off_ns: READ.off_ns + 325 * us,
        mono_ns: READ.mono_ns + 850 * us,
        queued_ns: READ.queued_ns + 25 * us,
        ..READ
    };
    let (sleep, _) = start.until_count(11, &now, 400 * us, None);
    assert_eq!((sleep.voluntary, sleep.involuntary), (1, 0));
    assert_eq!(sleep.off_ns, 300 * us + 25 * us / 2);
    // Without schedstat, by count: half.
    let no_schedstat = Mark {
        queued_ns: READ.queued_ns,
        ..now
    };
    let (sleep, _) = start.until_count(11, &no_schedstat, 400 * us, None);
    assert_eq!(sleep.off_ns, 325 * us / 2);
}
