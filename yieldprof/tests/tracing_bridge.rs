//! The `tracing` feature: wait episodes appear as spans to a subscriber, and spans
//! (`#[tracing::instrument]`) appear as business frames. Run with
//! `cargo test -p yieldprof --features tracing`. Each test uses its own wait site and
//! a thread-local subscriber, so tests running in parallel don't mix.
#![cfg(feature = "tracing")]

use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use yieldprof::report::Metric;
use yieldprof::tracing_bridge::SpanFrames;
use yieldprof::{Kind, Session};

/// What a tiny in-test layer saw: `new <target>:<name> site=<site>` and `close`.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

struct SiteField(String);

impl Visit for SiteField {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "site" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let mut site = SiteField(String::new());
        attrs.record(&mut site);
        let meta = attrs.metadata();
        self.0.lock().unwrap().push(format!(
            "new {}:{} site={}",
            meta.target(),
            meta.name(),
            site.0
        ));
    }

    fn on_close(&self, _id: Id, _ctx: Context<'_, S>) {
        self.0.lock().unwrap().push("close".to_string());
    }
}

#[yieldprof::instrument_wait]
fn poll_twice() {
    std::thread::yield_now();
    std::thread::yield_now();
}

#[test]
fn each_wait_episode_is_one_closed_trace_span_named_after_its_site() {
    let seen = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(seen.clone());
    let session = Session::this_thread();
    tracing::subscriber::with_default(subscriber, || (0..3).for_each(|_| poll_twice()));
    let report = session.finish();
    let events = seen.0.lock().unwrap().clone();
    let one = [
        "new yieldprof:wait site=tracing_bridge::poll_twice",
        "close",
    ];
    assert_eq!(events, one.repeat(3));
    // The profile itself is unchanged by the bridge.
    let site = report.site("poll_twice").unwrap();
    assert_eq!((site.episodes, site.calls_of(Kind::Yield)), (3, 6));
}

#[yieldprof::instrument_wait]
fn wait_in_request() {
    std::thread::yield_now();
}

#[tracing::instrument]
fn handle_request(n: u32) {
    for _ in 0..n {
        wait_in_request();
    }
}

#[test]
fn instrumented_functions_become_business_frames_above_their_waits() {
    let subscriber = tracing_subscriber::registry().with(SpanFrames::new());
    let session = Session::this_thread();
    tracing::subscriber::with_default(subscriber, || {
        handle_request(2);
        // Another call with other field values is the same frame.
        handle_request(3);
    });
    let folded = session.finish().folded(Metric::Calls);
    let waits: Vec<&String> = folded.iter().filter(|l| l.contains("[yield]")).collect();
    // Only the business frame in between: yieldprof's own `wait` spans are not frames.
    assert_eq!(waits.len(), 1, "{folded:?}");
    assert!(
        waits[0].ends_with(";handle_request;tracing_bridge::wait_in_request;[yield] 5"),
        "{folded:?}"
    );
}

#[yieldprof::instrument_wait]
fn quiet_wait() {
    std::thread::yield_now();
}

#[test]
fn without_a_subscriber_episodes_are_recorded_as_usual() {
    let session = Session::this_thread();
    (0..4).for_each(|_| quiet_wait());
    let site = session.finish().site("quiet_wait").unwrap();
    assert_eq!((site.episodes, site.calls_of(Kind::Yield)), (4, 4));
}

#[yieldprof::instrument_wait]
async fn async_poll() {
    std::thread::yield_now();
}

struct NoWake;

impl std::task::Wake for NoWake {
    fn wake(self: Arc<Self>) {}
}

/// Polls a future that never returns `Pending` to completion.
fn run_ready<F: std::future::Future>(f: F) -> F::Output {
    let waker = Arc::new(NoWake).into();
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn an_async_wait_episode_is_one_span_too() {
    let seen = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(seen.clone());
    let session = Session::this_thread();
    tracing::subscriber::with_default(subscriber, || run_ready(async_poll()));
    let events = seen.0.lock().unwrap().clone();
    assert_eq!(
        events,
        [
            "new yieldprof:wait site=tracing_bridge::async_poll",
            "close"
        ]
    );
    assert_eq!(session.finish().site("async_poll").unwrap().episodes, 1);
}
