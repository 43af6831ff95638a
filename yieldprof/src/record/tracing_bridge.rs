//! The `tracing` bridge (cargo feature `tracing`), both ways.
//!
//! - **Wait episodes become spans.** Each `#[instrument_wait]` call is also a
//!   `tracing` span named `wait`, target `yieldprof`, level `TRACE`, with the fields
//!   `site` (the frame name, e.g. `spsc::wait_for_space`), `site.file` and
//!   `site.line`; an `async fn` episode is one span entered on each poll. A
//!   subscriber that already ships traces (OpenTelemetry, tracing-chrome, `fmt`)
//!   then shows the waits inside its requests. All sites share one span callsite, so
//!   tell them apart by the `site` field. With no subscriber, or `TRACE` filtered
//!   out for `yieldprof`, the span is a disabled-callsite check (a few ns).
//! - **Spans become business frames.** [`SpanFrames`] is a `tracing-subscriber`
//!   layer: every span entered on a thread opens a business frame named after it
//!   (like `yieldprof::frame!`), so existing `#[tracing::instrument]` functions show
//!   by name above the wait sites they call, with no `frame!` added.
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! #[tracing::instrument]
//! fn handle_request() {
//!     yieldprof::wait::yield_now();
//! }
//!
//! let subscriber = tracing_subscriber::registry().with(yieldprof::tracing_bridge::SpanFrames::new());
//! tracing::subscriber::with_default(subscriber, handle_request);
//! let folded = yieldprof::snapshot().folded(yieldprof::report::Metric::Calls);
//! assert!(folded.iter().any(|l| l.ends_with(";handle_request;[yield] 1")), "{folded:?}");
//! ```

use crate::base::site::{EpisodeSite, WorkSite};
use crate::record::episode::{self, EpisodeGuard, WaitGuard};
use crate::record::woken::Woken;
use std::cell::RefCell;
use std::future::Future;
use std::ops::Deref;
use tracing::instrument::Instrument;
use tracing::span::{EnteredSpan, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The target of yieldprof's own spans; [`SpanFrames`] leaves them out.
const TARGET: &str = "yieldprof";

fn span_of(site: &'static EpisodeSite) -> tracing::Span {
    // The fields are evaluated only when a subscriber wants the span.
    tracing::span!(
        target: TARGET,
        tracing::Level::TRACE,
        "wait",
        site = %site.info().name,
        site.file = site.file,
        site.line = site.line,
    )
}

/// A wait episode and its span: the episode closes first, so the span covers it.
#[doc(hidden)]
#[must_use = "the frame closes when this guard drops"]
pub struct TracedEpisode {
    episode: WaitGuard,
    _span: EnteredSpan,
}

impl Deref for TracedEpisode {
    type Target = WaitGuard;

    fn deref(&self) -> &WaitGuard {
        &self.episode
    }
}

/// `__private::enter` with the feature on: the episode inside an entered span.
#[doc(hidden)]
#[inline]
pub fn enter(site: &'static EpisodeSite) -> TracedEpisode {
    let span = span_of(site).entered();
    TracedEpisode {
        episode: episode::enter(site),
        _span: span,
    }
}

/// `__private::instrument` with the feature on: one span for the whole `async fn`
/// episode, entered on each poll.
#[doc(hidden)]
pub fn instrument<F: Future>(
    site: &'static EpisodeSite,
    inner: F,
) -> tracing::instrument::Instrumented<episode::Instrumented<Woken<F>>> {
    episode::instrument(site, inner).instrument(span_of(site))
}

thread_local! {
    /// The business frames [`SpanFrames`] has open on this thread, innermost last.
    static OPEN: RefCell<Vec<(Id, EpisodeGuard)>> = const { RefCell::new(Vec::new()) };
}

/// A `tracing-subscriber` layer that turns every entered span into a business frame
/// named after the span (see the [module docs](self)). yieldprof's own `wait` spans
/// are left out: those are wait sites already.
///
/// A span's frame is keyed by its callsite, so each `#[tracing::instrument]`
/// function is one frame whatever its field values.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpanFrames {
    _private: (),
}

impl SpanFrames {
    /// The layer; add it with `tracing_subscriber::registry().with(SpanFrames::new())`.
    pub fn new() -> SpanFrames {
        SpanFrames { _private: () }
    }
}

impl<S> Layer<S> for SpanFrames
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(meta) = ctx.metadata(id) else {
            return;
        };
        if meta.target() == TARGET {
            return;
        }
        let key = meta as *const tracing::Metadata<'static> as usize;
        let guard = episode::open_frame(key, || {
            WorkSite::new(
                meta.name(),
                meta.file().unwrap_or(""),
                meta.line().unwrap_or(0),
            )
            .info()
        });
        // `try_with`: spans entered while the thread is being torn down are ignored;
        // `try_borrow_mut`: so are spans entered in a signal handler that interrupted
        // this list's update (the guard closes the frame at once).
        let _ = OPEN.try_with(|open| {
            if let Ok(mut open) = open.try_borrow_mut() {
                open.push((id.clone(), guard));
            }
        });
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        let _ = OPEN.try_with(|open| {
            let Ok(mut open) = open.try_borrow_mut() else {
                return;
            };
            // Spans normally exit innermost first; if one exits out of order, the
            // frames opened inside it close too, innermost first, as the tree needs.
            if let Some(at) = open.iter().rposition(|(open_id, _)| open_id == id) {
                while open.len() > at {
                    drop(open.pop());
                }
            }
        });
    }
}
