//! A blocking call inside an async task holds its executor's worker thread: the other
//! tasks woken on that thread wait for it before they are polled. On a hand-made
//! single-threaded executor that stamps every wake and every poll with its own clock,
//! one task sleeps 20 ms without `.await` while three others are ready and a fourth is
//! woken only after the sleep: the report names the sleep's line, how long it held the
//! thread (against the sleeping task's own clock) and how long the three waited for it
//! (against their wake→poll times on the executor's clock); the fourth is not charged.
//! (Own test binary: the held figures are per call line over the whole run.)

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

const BLOCK: Duration = Duration::from_millis(20);
const READY_TASKS: usize = 3;

/// The executor's shared state: the run queue, and each task's first wake since its
/// last poll.
#[derive(Default)]
struct Queue {
    ready: VecDeque<usize>,
    woken_at: Vec<Option<Instant>>,
}

struct TaskWaker {
    id: usize,
    queue: Arc<Mutex<Queue>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut q = self.queue.lock().unwrap();
        if q.woken_at[self.id].is_none() {
            q.woken_at[self.id] = Some(Instant::now());
            q.ready.push_back(self.id);
        }
    }
}

/// One poll that answered a wake: which task, and its wake→poll time.
struct Answered {
    task: usize,
    waited: Duration,
}

/// Polls tasks in wake order on this thread until all are done; every task is ready
/// at the start, in order.
fn run(tasks: Vec<Pin<Box<dyn Future<Output = ()>>>>) -> Vec<Answered> {
    let queue = Arc::new(Mutex::new(Queue::default()));
    let n = tasks.len();
    let mut tasks: Vec<Option<_>> = tasks.into_iter().map(Some).collect();
    {
        let mut q = queue.lock().unwrap();
        q.woken_at = vec![None; n];
        q.ready = (0..n).collect();
    }
    let wakers: Vec<Waker> = (0..n)
        .map(|id| {
            Waker::from(Arc::new(TaskWaker {
                id,
                queue: queue.clone(),
            }))
        })
        .collect();
    let mut answered = Vec::new();
    loop {
        let (id, woken) = {
            let mut q = queue.lock().unwrap();
            let Some(id) = q.ready.pop_front() else { break };
            (id, q.woken_at[id].take())
        };
        let polled = Instant::now();
        if let Some(w) = woken {
            answered.push(Answered {
                task: id,
                waited: polled - w,
            });
        }
        let Some(task) = tasks[id].as_mut() else {
            continue;
        };
        if task
            .as_mut()
            .poll(&mut Context::from_waker(&wakers[id]))
            .is_ready()
        {
            tasks[id] = None;
        }
    }
    assert!(tasks.iter().all(Option::is_none), "a task never finished");
    answered
}

/// Wakes itself and is pending once: ready to run again at once.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Pending until `Signal::fire` wakes it.
#[derive(Clone, Default)]
struct Signal(Arc<Mutex<(bool, Option<Waker>)>>);

impl Signal {
    fn fire(&self) {
        let mut s = self.0.lock().unwrap();
        s.0 = true;
        if let Some(w) = s.1.take() {
            w.wake();
        }
    }
}

impl Future for Signal {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.0.lock().unwrap();
        if s.0 {
            return Poll::Ready(());
        }
        s.1 = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[yieldprof::instrument_wait]
async fn ready_task() {
    YieldNow(false).await;
}

#[yieldprof::instrument_wait]
async fn woken_after(signal: Signal) {
    signal.await;
}

/// The sleep's span on the sleeping task's own clock.
type Span = Arc<Mutex<Option<(Instant, Instant)>>>;

fn stamp(span: &Span, start: Instant) {
    *span.lock().unwrap() = Some((start, Instant::now()));
}

#[yieldprof::instrument_wait]
async fn blocks_its_worker(span: Span, then: Signal) {
    let start = Instant::now();
    std::thread::sleep(BLOCK); // @blocking-sleep
    stamp(&span, start);
    then.fire();
}

fn line_of(marker: &str) -> u32 {
    let src = include_str!("async_blocking.rs");
    let i = src
        .lines()
        .position(|l| l.ends_with(marker) && !l.contains("line_of"))
        .expect("marker");
    i as u32 + 1
}

#[test]
fn a_blocking_call_in_a_task_names_its_line_what_it_held_and_who_waited() {
    let span: Span = Arc::default();
    let signal = Signal::default();
    let mut tasks: Vec<Pin<Box<dyn Future<Output = ()>>>> = Vec::new();
    // Tasks 0..3 wake themselves on their first poll and are ready again before the
    // blocker runs; task 3 is woken by the blocker after its sleep.
    for _ in 0..READY_TASKS {
        tasks.push(Box::pin(ready_task()));
    }
    tasks.push(Box::pin(woken_after(signal.clone())));
    tasks.push(Box::pin(blocks_its_worker(span.clone(), signal)));
    let answered = run(tasks);
    let (slept_from, slept_to) = span.lock().unwrap().expect("the blocker ran");
    let slept = slept_to - slept_from;

    // The executor's own figures: each ready task answered one wake after the sleep.
    let waits: Vec<Duration> = answered
        .iter()
        .filter(|a| a.task < READY_TASKS)
        .map(|a| a.waited)
        .collect();
    assert_eq!(waits.len(), READY_TASKS, "one re-poll per ready task");
    let waited: Duration = waits.iter().sum();
    let longest = *waits.iter().max().unwrap();
    assert!(waits.iter().all(|w| *w >= BLOCK), "{waits:?}");

    let profile = yieldprof::snapshot();
    let site = profile
        .site("blocks_its_worker")
        .expect("the blocking site");
    let line = line_of("// @blocking-sleep");
    let call = site
        .calls
        .iter()
        .find(|c| c.site.line == line)
        .expect("the sleep call");
    assert!(call.site.in_async);
    let held = call
        .held
        .expect("held figures of a call made from async code");
    let ns = |d: Duration| d.as_nanos() as u64;
    // Ticks become ns by a measured ratio: allow 1 µs per figure for it.
    let rounding = 1_000;

    // How long it held the worker: inside the task's own span around the sleep.
    assert!(
        held.max_ns >= ns(BLOCK) && held.max_ns <= ns(slept) + rounding,
        "longest call {} ns outside [{BLOCK:?}, {slept:?}]",
        held.max_ns
    );
    assert_eq!(call.calls, 1);
    assert!(
        call.ns >= ns(BLOCK) && call.ns <= ns(slept) + rounding,
        "held {} ns outside [{BLOCK:?}, {slept:?}]",
        call.ns
    );

    // Who waited for it: the three ready tasks, each for the whole sleep at least and
    // never more than its own wake→poll time; the task woken after it, not at all.
    assert_eq!(held.delayed_polls, READY_TASKS as u64, "{held:?}");
    assert!(
        held.delayed_ns >= READY_TASKS as u64 * ns(BLOCK)
            && held.delayed_ns <= ns(waited) + READY_TASKS as u64 * rounding,
        "waited {} ns for it; the executor saw {waited:?} of wake→poll, the sleep {slept:?}",
        held.delayed_ns
    );
    assert!(
        held.delayed_max_ns >= ns(BLOCK) && held.delayed_max_ns <= ns(longest) + rounding,
        "longest wait {} ns; the executor's longest {longest:?}",
        held.delayed_max_ns
    );
    println!(
        "held {:.2} ms (sleep by its own clock {slept:?}); 3 tasks waited {:.2} ms for it, \
         {waited:?} wake→poll by the executor's clock ({:.1}% covered by the sleep)",
        held.max_ns as f64 / 1e6,
        held.delayed_ns as f64 / 1e6,
        100.0 * held.delayed_ns as f64 / ns(waited) as f64
    );

    // The finding cites the call's line with those figures; the summary and JSON carry
    // them.
    use yieldprof::report::text::duration;
    let findings = profile.findings(&yieldprof::report::Costs::current());
    let f = findings
        .iter()
        .find(|f| f.rule.name() == "blocking-call-in-async")
        .expect("the finding");
    println!("{f}");
    assert_eq!(
        f.location.as_deref(),
        Some(format!("tests/async_blocking.rs:{line}").as_str())
    );
    let expected = format!(
        "3 polls of other annotated async episodes woken on that thread waited {} in all for \
         it to return (longest {})",
        duration(held.delayed_ns),
        duration(held.delayed_max_ns)
    );
    assert!(f.evidence.contains(&expected), "{expected:?} not in {f}");
    assert!(
        f.evidence
            .contains(&format!("longest {}", duration(held.max_ns))),
        "{f}"
    );
    assert!(f.fix.contains("spawn_blocking"), "{f}");
    let text = profile.summary();
    assert!(
        text.contains(&format!(
            "blocked in async code: held its thread up to {} at once; 3 polls",
            duration(held.max_ns)
        )),
        "{text}"
    );
    let doc = profile.json(&yieldprof::report::Costs::current());
    let json = doc
        .sites
        .iter()
        .flat_map(|s| &s.calls)
        .find(|c| c.line == line)
        .and_then(|c| c.held.clone())
        .expect("held in the JSON");
    assert_eq!(
        (json.max_ns, json.delayed_polls, json.delayed_ns),
        (held.max_ns, held.delayed_polls, held.delayed_ns)
    );
}
