//! The live view (feature `http`): while the program runs, a page with the current flame
//! graph, summary and findings, and pprof's `/debug/pprof/profile?seconds=N`, so that
//! `go tool pprof http://127.0.0.1:PORT` works as on a Go service.
//!
//! Off unless asked for ([`Options::http`], `YIELDPROF_HTTP=127.0.0.1:PORT`): no socket
//! and no thread otherwise. It listens on loopback addresses only, because the page
//! shows the command line, thread names and source paths to whoever can connect;
//! [`Options::http_any`] (`YIELDPROF_HTTP_ANY=1`) lifts that for a trusted network.
//!
//! The server is tiny_http: blocking HTTP/1.1 with no async runtime and four small
//! dependencies, which suits a profiler that must not bring a runtime into its host. It
//! accepts on a thread of its own and reads requests on a small pool (4 threads, more
//! under load, idle ones exit); this module answers them on one thread,
//! `yieldprof-http`, and each profile request waits on a thread of its own (at most
//! [`MAX_PROFILES`] at once), so the page stays live. All of them stop when the guard
//! drops: a profile request still waiting is answered with what it has.

use crate::analysis::costs::Costs;
use crate::config::Metric;
use crate::model::profile::Profile;
use crate::output::flamegraph::write_svg;
use crate::output::options::Options;
use crate::output::pprof::{self, Window};
use crate::record::thread::snapshot;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};
use tiny_http::{Header, Request, Response, Server};

/// Profile requests waiting at once; more are answered 429 (each holds a thread).
pub(crate) const MAX_PROFILES: usize = 4;

/// `seconds` of a profile request when not given: `go tool pprof`'s default.
const DEFAULT_SECONDS: f64 = 30.0;

/// The longest profile request honoured.
const MAX_SECONDS: f64 = 3600.0;

/// How often the page reloads itself unless `?refresh=` says otherwise.
const DEFAULT_REFRESH_S: u32 = 5;

/// The running live view; dropping it stops the server and its threads.
pub(crate) struct LiveView {
    server: Arc<Server>,
    stop: Arc<Stop>,
    thread: Option<JoinHandle<()>>,
    /// Where it listens, with the port the system chose for port 0.
    pub(crate) addr: SocketAddr,
}

/// Set when the guard drops; wakes profile requests that are still waiting.
#[derive(Debug, Default)]
struct Stop {
    stopped: Mutex<bool>,
    woken: Condvar,
}

impl Stop {
    /// Waits until `deadline` or the stop, whichever comes first.
    fn wait_until(&self, deadline: Instant) {
        let mut stopped = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        while !*stopped {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            stopped = match self.woken.wait_timeout(stopped, left) {
                Ok((guard, _)) => guard,
                Err(e) => e.into_inner().0,
            };
        }
    }

    fn set(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.woken.notify_all();
    }
}

impl LiveView {
    /// Starts serving on `opts.http`; `None`, with one line on stderr, when it is not
    /// set, not allowed (not loopback without `http_any`) or cannot be bound.
    pub(crate) fn start(opts: &Options) -> Option<LiveView> {
        let asked = opts.http?;
        if !asked.ip().is_loopback() && !opts.http_any {
            eprintln!(
                "yieldprof: no live view on {asked}: it shows command lines and thread names, \
                 so it listens on loopback addresses only unless YIELDPROF_HTTP_ANY=1"
            );
            return None;
        }
        let server = match Server::http(asked) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                eprintln!("yieldprof: no live view: cannot listen on {asked}: {e}");
                return None;
            }
        };
        // Port 0 asks the system for one: the page is at the port it gave.
        let addr = server.server_addr().to_ip().unwrap_or(asked);
        let stop = Arc::new(Stop::default());
        let (serving, stopping, name) = (server.clone(), stop.clone(), opts.name.clone());
        let shown = Shown {
            metric: opts.metric,
            threads: opts.report_threads,
        };
        let spawned = std::thread::Builder::new()
            .name("yieldprof-http".into())
            .spawn(move || serve(&serving, &stopping, &name, shown));
        match spawned {
            Ok(thread) => {
                eprintln!("yieldprof: live view at http://{addr}/");
                Some(LiveView {
                    server,
                    stop,
                    thread: Some(thread),
                    addr,
                })
            }
            Err(e) => {
                eprintln!("yieldprof: no live view: cannot start its thread: {e}");
                None
            }
        }
    }
}

impl std::fmt::Debug for LiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveView")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        self.stop.set();
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Answers requests until the server is unblocked, then waits for the profile threads.
/// What the pages show: the metric drawn, and the threads listed one by one as a
/// written report lists them (the rest merged).
#[derive(Clone, Copy)]
struct Shown {
    metric: Metric,
    threads: Option<usize>,
}

impl Shown {
    /// The profile now, listed.
    fn now(self) -> Profile {
        snapshot().into_listing(self.threads)
    }
}

fn serve(server: &Server, stop: &Arc<Stop>, name: &str, shown: Shown) {
    let waiting = Arc::new(AtomicUsize::new(0));
    let mut profiles: Vec<JoinHandle<()>> = Vec::new();
    for request in server.incoming_requests() {
        profiles.retain(|p| !p.is_finished());
        let url = request.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        let get = matches!(
            request.method(),
            tiny_http::Method::Get | tiny_http::Method::Head
        );
        let response = match path {
            _ if !get => text(405, "the live view answers GET and HEAD only\n"),
            "/debug/pprof/profile" => {
                profiles.extend(profile_request(request, query, stop, &waiting, shown));
                continue;
            }
            "/" => page(name, shown, param(query, "refresh")),
            "/flamegraph.svg" => {
                let svg = flamegraph(&shown.now(), name, shown.metric);
                with_type(Response::from_data(svg), "image/svg+xml")
            }
            "/summary.txt" => text(200, &shown.now().summary()),
            "/report.json" => {
                let doc = shown.now().json(&Costs::current());
                let json = crate::base::json::to_string_pretty(&doc);
                with_type(Response::from_data(json), "application/json")
            }
            "/debug/pprof" | "/debug/pprof/" => with_type(
                Response::from_string(PPROF_INDEX),
                "text/html; charset=utf-8",
            ),
            _ => text(404, "not found: try / or /debug/pprof/\n"),
        };
        // A client that hung up is no concern of the program's.
        let _ = request.respond(response);
    }
    for p in profiles {
        let _ = p.join();
    }
}

/// A response with a body of bytes.
type Answer = Response<std::io::Cursor<Vec<u8>>>;

fn with_type(response: Answer, content_type: &str) -> Answer {
    match Header::from_bytes("Content-Type", content_type) {
        Ok(h) => response.with_header(h),
        Err(()) => response,
    }
}

fn text(status: u16, body: &str) -> Answer {
    with_type(Response::from_string(body), "text/plain; charset=utf-8").with_status_code(status)
}

/// The value of `key` in a query string (`a=1&b=2`); values here need no decoding.
fn param<'q>(query: &'q str, key: &str) -> Option<&'q str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// `/debug/pprof/profile?seconds=N`: on a thread of its own, waits N seconds and
/// answers with what was recorded meanwhile, as a gzipped pprof profile.
fn profile_request(
    request: Request,
    query: &str,
    stop: &Arc<Stop>,
    waiting: &Arc<AtomicUsize>,
    shown: Shown,
) -> Option<JoinHandle<()>> {
    let seconds = match param(query, "seconds").map(str::parse::<f64>) {
        None => DEFAULT_SECONDS,
        Some(Ok(s)) if s > 0.0 && s <= MAX_SECONDS => s,
        Some(_) => {
            let why = format!("seconds must be a number above 0 and at most {MAX_SECONDS}\n");
            let _ = request.respond(text(400, &why));
            return None;
        }
    };
    if waiting.fetch_add(1, SeqCst) >= MAX_PROFILES {
        waiting.fetch_sub(1, SeqCst);
        let why = format!("{MAX_PROFILES} profiles are being taken; try again later\n");
        let _ = request.respond(text(429, &why));
        return None;
    }
    let (stop, in_flight) = (stop.clone(), waiting.clone());
    let earlier = snapshot();
    let since = SystemTime::now();
    let spawned = std::thread::Builder::new()
        .name("yieldprof-http-profile".into())
        .spawn(move || {
            stop.wait_until(Instant::now() + Duration::from_secs_f64(seconds));
            let delta = snapshot().since(&earlier).into_listing(shown.threads);
            let window = Window {
                start: since,
                length: SystemTime::now().duration_since(since).unwrap_or_default(),
            };
            let mut gz = Vec::new();
            let response = match pprof::write(&delta, window, &mut gz) {
                Ok(()) => with_type(Response::from_data(gz), "application/octet-stream"),
                Err(e) => text(500, &format!("the profile could not be encoded: {e}\n")),
            };
            let _ = request.respond(response);
            in_flight.fetch_sub(1, SeqCst);
        });
    match spawned {
        Ok(thread) => Some(thread),
        Err(e) => {
            // The request went down with the closure: tiny_http answers it 500.
            waiting.fetch_sub(1, SeqCst);
            eprintln!("yieldprof: live view: cannot start a thread for a profile: {e}");
            None
        }
    }
}

/// The current flame graph, drawn as the one the guard writes: the same title,
/// subtitle, colours and hover figures.
fn flamegraph(profile: &Profile, name: &str, metric: Metric) -> Vec<u8> {
    let stacks = profile.fold(metric);
    let subtitle = profile.headline();
    let mut svg = Vec::new();
    let title = format!("yieldprof: {name}");
    let notes = profile.frame_notes();
    if let Err(e) = write_svg(&stacks, metric, &title, Some(subtitle), &notes, &mut svg) {
        svg = format!("<p>the flame graph could not be drawn: {e}</p>").into_bytes();
    }
    svg
}

/// Text made safe inside HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `/`: the flame graph inline (so its search and zoom work in the page), the summary
/// with its findings, and links to the rest. `refresh=0` stops the reloading, which
/// would undo a zoom.
fn page(name: &str, shown: Shown, refresh: Option<&str>) -> Answer {
    let refresh = refresh
        .and_then(|r| r.parse().ok())
        .unwrap_or(DEFAULT_REFRESH_S);
    let profile = shown.now();
    let svg = flamegraph(&profile, name, shown.metric);
    let svg = String::from_utf8_lossy(&svg);
    // The SVG's XML prologue and doctype have no place inside HTML.
    let svg = svg.find("<svg").map_or(&*svg, |at| &svg[at..]);
    let (reload, refreshing) = match refresh {
        0 => (
            String::new(),
            "not reloading (<a href=\"/\">reload on</a>)".to_string(),
        ),
        s => (
            format!("<meta http-equiv=\"refresh\" content=\"{s}\">"),
            format!("refreshed every {s} s (<a href=\"/?refresh=0\">stop</a> to zoom)"),
        ),
    };
    let html = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">{reload}\n\
         <title>yieldprof: {name}</title>\n\
         <style>body {{ font-family: sans-serif; margin: 1em; }} pre {{ font-size: 12px; }} \
         #flamegraph svg {{ width: 100%; height: auto; }}</style>\n\
         </head><body>\n<h1>yieldprof: {name}</h1>\n\
         <p>{headline}; {refreshing}. \
         <a href=\"/flamegraph.svg\">flame graph</a> · <a href=\"/summary.txt\">summary</a> · \
         <a href=\"/report.json\">JSON</a> · <a href=\"/debug/pprof/\">pprof</a></p>\n\
         <div id=\"flamegraph\">{svg}</div>\n\
         <h2>Summary and findings</h2>\n<pre id=\"summary\">{summary}</pre>\n</body></html>\n",
        name = escape(name),
        headline = escape(&profile.headline()),
        summary = escape(&profile.summary()),
    );
    with_type(Response::from_string(html), "text/html; charset=utf-8")
}

/// `/debug/pprof/`: what `go tool pprof` and a person can fetch.
const PPROF_INDEX: &str = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
<title>yieldprof: pprof</title></head><body>\n<h1>pprof endpoints</h1>\n<ul>\n\
<li><a href=\"/debug/pprof/profile?seconds=30\">/debug/pprof/profile?seconds=N</a>: what was \
recorded in the next N seconds (default 30), gzipped pprof: \
<code>go tool pprof http://HOST:PORT/debug/pprof/profile?seconds=10</code></li>\n</ul>\n\
<p>Sample types: wall (ns), calls, episodes, and the context switches counted.</p>\n</body></html>\n";
