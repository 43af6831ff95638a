//! An `async fn` wait episode spans its first poll to its completion: the duration
//! histogram holds whole episodes, the polls are its wall time, the gaps between them
//! its suspended time. Checked against the test's own clock and the gaps it arranges.
//! (Own test binary: it reads one site's totals.)

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Pending `left` times, then ready.
struct PendingFor(u32);

impl Future for PendingFor {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            Poll::Ready(())
        } else {
            self.0 -= 1;
            Poll::Pending
        }
    }
}

#[yieldprof::instrument_wait]
async fn wait_for_reply(pending: u32) {
    PendingFor(pending).await;
}

const EPISODES: u64 = 6;
const POLLS: u32 = 4;
const GAP: Duration = Duration::from_millis(3);

/// Runs one episode, sleeping `GAP` between polls; the span the test's clock saw from
/// just before the first poll to just after the last.
fn run_one() -> Duration {
    let mut cx = Context::from_waker(Waker::noop());
    let mut task = Box::pin(wait_for_reply(POLLS - 1));
    let start = Instant::now();
    while task.as_mut().poll(&mut cx).is_pending() {
        std::thread::sleep(GAP);
    }
    start.elapsed()
}

#[test]
fn an_async_episode_spans_first_poll_to_completion() {
    let outer: Duration = (0..EPISODES).map(|_| run_one()).sum();
    let profile = yieldprof::snapshot();
    let site = profile.site("wait_for_reply").expect("the async site");
    assert_eq!(site.episodes, EPISODES);
    assert_eq!(site.durations.count(), EPISODES);

    // Each episode waited (POLLS - 1) gaps between its polls, at least.
    let gaps = GAP * (POLLS - 1);
    let min = site.durations.min().unwrap();
    assert!(
        min >= gaps.as_nanos() as u64,
        "shortest episode {min} ns < the {gaps:?} of gaps in it"
    );
    let max = site.durations.max().unwrap();
    assert!(
        Duration::from_nanos(max) <= outer,
        "longest episode {max} ns > all episodes by the test's clock {outer:?}"
    );

    // The polls are the wall time; the gaps the suspended time; both make the span.
    let span = site.wall_ns + site.suspended_ns;
    assert!(
        span >= (gaps * EPISODES as u32).as_nanos() as u64 && span <= outer.as_nanos() as u64,
        "wall {} + suspended {} outside [{:?}, {outer:?}]",
        site.wall_ns,
        site.suspended_ns,
        gaps * EPISODES as u32
    );
    assert!(
        site.wall_ns < site.suspended_ns / 10,
        "polls {} ns should be a sliver of the {} ns suspended",
        site.wall_ns,
        site.suspended_ns
    );
    // Ticks become ns per figure, so the sum of spans and the histogram's total may
    // differ by rounding only.
    let total = site.durations.total_ns();
    assert!(
        total.abs_diff(span) <= span / 100 + 1_000,
        "episodes total {total} ns != wall + suspended {span} ns"
    );

    let text = profile.summary();
    assert!(
        text.contains("suspended between polls"),
        "summary names the suspended time:\n{text}"
    );
    // Every figure on one line covers the same thing, and says which: whole episodes on
    // the count and durations lines, polls on the async line.
    use yieldprof::report::text::duration;
    let whole = format!(
        "    {EPISODES} episodes, {} span (first poll to completion), {} mean span\n",
        duration(span),
        duration(span / EPISODES)
    );
    assert!(text.contains(&whole), "{whole:?} not in\n{text}");
    let polls = format!(
        "    async: {} polled ({} mean per episode), {} suspended between polls",
        duration(site.wall_ns),
        duration(site.wall_ns / EPISODES),
        duration(site.suspended_ns)
    );
    assert!(text.contains(&polls), "{polls:?} not in\n{text}");
    let durations = format!(
        "    durations (first poll to completion): min {}, ",
        duration(min)
    );
    assert!(text.contains(&durations), "{durations:?} not in\n{text}");
    assert!(text.contains("    time (polls): "), "{text}");
    let doc = profile.json(&yieldprof::report::Costs::current());
    assert_eq!(doc.inconsistencies(), Vec::<String>::new());
    let json = doc
        .sites
        .iter()
        .find(|s| s.name.ends_with("wait_for_reply"));
    assert_eq!(json.unwrap().suspended_ns, site.suspended_ns);
}
