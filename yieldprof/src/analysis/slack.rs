//! Timer slack, asked vs got: a sleep-like call asked for `d` and took `d` plus up to
//! the thread's timer slack (50 µs by default on Linux): the kernel may defer the wake-up
//! that long to batch timers. What a call asked for comes from the macro
//! (`base::asked`); the finding compares the two instead of the call's time with a
//! fixed cut, and never fires where no timer is involved (`park()` without a timeout).

use crate::analysis::costs::Costs;
use crate::base::asked::Asked;
use crate::base::site::Kind;
use crate::base::text::duration;
use crate::model::profile::{CallStats, SiteStats};

/// `asked 1.00 µs each, slept 58.2 µs median (61.0 µs mean)`: what a sleep-like call
/// line asked for beside what it took; the median where the site has one line of the
/// call's kind (its durations are per kind).
pub(crate) fn asked_vs_got(site: &SiteStats, c: &CallStats, a: &Asked) -> String {
    let asked = if a.min_ns == a.max_ns {
        format!("asked {} each", duration(a.mean_ns))
    } else {
        format!(
            "asked {} mean ({}–{})",
            duration(a.mean_ns),
            duration(a.min_ns),
            duration(a.max_ns)
        )
    };
    let verb = if c.site.kind == Kind::Park {
        "parked"
    } else {
        "slept"
    };
    let mean = duration(c.ns / c.calls.max(1));
    let one_line = site
        .calls
        .iter()
        .filter(|o| o.site.kind == c.site.kind)
        .count()
        == 1;
    let median = site
        .call_durations
        .iter()
        .find(|(k, _)| *k == c.site.kind && one_line)
        .and_then(|(_, h)| h.quantile(0.5));
    match median {
        Some(m) => format!("{asked}, {verb} {} median ({mean} mean)", duration(m)),
        None => format!("{asked}, {verb} {mean} mean"),
    }
}

/// The median duration of call `c` where the site has one line of its kind, else its
/// mean, ns.
pub(crate) fn typical(site: &SiteStats, c: &CallStats) -> u64 {
    let one_line = site
        .calls
        .iter()
        .filter(|o| o.site.kind == c.site.kind)
        .count()
        == 1;
    site.call_durations
        .iter()
        .find(|(k, _)| *k == c.site.kind && one_line)
        .and_then(|(_, h)| h.quantile(0.5))
        .unwrap_or(c.ns / c.calls.max(1))
}

/// Evidence and fix when the timer slack rounds call `c` up: it asked for less than
/// the slack and took at least half the slack more than it asked (median where known).
/// Without a request seen, a sleep is judged by its time alone (within 2.5× the slack);
/// a park never, since `park()` without a timeout sets no timer.
pub(crate) fn rounded_to_slack(
    site: &SiteStats,
    c: &CallStats,
    costs: &Costs,
) -> Option<(String, String)> {
    let slack = costs.timer_slack_ns;
    let took = typical(site, c);
    let evidence = match (&c.asked, c.site.kind) {
        _ if slack == 0 => return None,
        (Some(a), _) if a.mean_ns < slack && took.saturating_sub(a.mean_ns) >= slack / 2 => {
            format!(
                "{} {} calls: {}: the {} timer slack rounds a sleep shorter than it up",
                c.calls,
                c.site.kind.name(),
                asked_vs_got(site, c, a),
                duration(slack)
            )
        }
        (None, Kind::Sleep) if took >= slack / 2 && took <= slack * 5 / 2 => format!(
            "{} sleep calls took {} each, within 2.5× the timer slack ({}), their request \
             unseen: a zero or short sleep is rounded up by the slack",
            c.calls,
            duration(took),
            duration(slack)
        ),
        _ => return None,
    };
    let instead = if c.site.kind == Kind::Park {
        "park without a timeout and unpark on the event"
    } else {
        "wake on the event (park/unpark, Condvar, futex)"
    };
    Some((
        evidence,
        format!(
            "lower this thread's slack with prctl(PR_SET_TIMERSLACK, 1) (nanosleep(0) ~9 µs \
             instead of ~59 µs on the build machine), or {instead}"
        ),
    ))
}
