//! Continuous mode: a long-running service writes what it recorded in each interval,
//! as folded stacks and pprof, so the files can be scraped or pushed to a backend.
//!
//! Each snapshot is a delta ([`Profile::since`] the previous one): a backend that
//! sums them gets the whole run, and no interval is counted twice. The first covers
//! everything recorded before it; the last is written when the [`Guard`] drops.
//!
//! Files go to `<out_dir>/snapshots/<name>.<UTC time>-<sequence>.{folded,pb.gz}`,
//! e.g. `svc.20261202T151023.120Z-000007.pb.gz`, so they sort in the order they were
//! taken, across restarts too. After each snapshot only the newest
//! [`keep_snapshots`](Options::keep_snapshots) are kept. A write that fails is
//! reported on stderr (once, until the error changes) and never stops the program;
//! the next snapshot that succeeds covers the missed interval too.
//!
//! This is the one place yieldprof runs a thread of its own, named
//! `yieldprof-snapshots`. It records nothing itself.

use crate::base::text::stamp;
use crate::config::{MAX_SNAPSHOT_INTERVAL, MIN_SNAPSHOT_INTERVAL};
use crate::model::profile::Profile;
use crate::output::files::{write_atomic, write_folded};
use crate::output::options::Options;
use crate::output::pprof::{self, Window};
use crate::record::thread::snapshot;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// The background writer; stops (after a last snapshot) when dropped.
#[derive(Debug)]
pub(crate) struct Snapshotter {
    stop: Sender<()>,
    thread: Option<JoinHandle<Writer>>,
}

impl Snapshotter {
    /// Starts the writer; `None` (and a message) if the thread cannot be created.
    pub(crate) fn start(opts: &Options, every: Duration) -> Option<Snapshotter> {
        Snapshotter::resume(Writer::new(opts.clone()), every)
    }

    pub(crate) fn resume(mut writer: Writer, every: Duration) -> Option<Snapshotter> {
        let (stop, stopped) = mpsc::channel();
        let every = every.clamp(MIN_SNAPSHOT_INTERVAL, MAX_SNAPSHOT_INTERVAL);
        let spawned = std::thread::Builder::new()
            .name("yieldprof-snapshots".into())
            .spawn(move || {
                let mut next = Instant::now() + every;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    // A message or a dropped sender both mean the guard is going.
                    let last =
                        !matches!(stopped.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
                    writer.take();
                    if last {
                        return writer;
                    }
                    next += every;
                    // Behind schedule (a slow disk, a suspended process): skip ahead
                    // rather than write a burst of tiny snapshots.
                    let now = Instant::now();
                    if next <= now {
                        next = now + every;
                    }
                }
            });
        match spawned {
            Ok(thread) => Some(Snapshotter {
                stop,
                thread: Some(thread),
            }),
            Err(e) => {
                eprintln!("yieldprof: cannot start the snapshot thread: {e}; no snapshots");
                None
            }
        }
    }

    /// Stops the writer after a last snapshot; its state, to go on from.
    pub(crate) fn finish(mut self) -> Option<Writer> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Option<Writer> {
        let thread = self.thread.take()?;
        let _ = self.stop.send(());
        match thread.join() {
            Ok(writer) => Some(writer),
            Err(_) => {
                eprintln!("yieldprof: the snapshot thread panicked; the last snapshot is missing");
                None
            }
        }
    }
}

impl Drop for Snapshotter {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The writer thread's state.
pub(crate) struct Writer {
    opts: Options,
    dir: PathBuf,
    previous: Profile,
    since: SystemTime,
    seq: u64,
    last_error: Option<String>,
}

impl Writer {
    pub(crate) fn new(opts: Options) -> Writer {
        Writer {
            dir: opts.snapshot_dir(),
            opts,
            previous: Profile::default(),
            since: SystemTime::now(),
            seq: 0,
            last_error: None,
        }
    }

    /// Writes the delta since the previous snapshot, then rotates. After a failed
    /// write the next snapshot covers both intervals, so nothing is lost or doubled.
    fn take(&mut self) {
        let now = snapshot();
        // Recording off and nothing recorded: nothing written, nothing rotated away.
        if !crate::config::enabled() && now.threads.is_empty() {
            return;
        }
        let end = SystemTime::now();
        // Listed as the written report lists them: ten thousand short threads make
        // snapshots of a few hundred entries, every total unchanged.
        let delta = now
            .since(&self.previous)
            .into_listing(self.opts.report_threads);
        let window = Window {
            start: self.since,
            length: end.duration_since(self.since).unwrap_or_default(),
        };
        let stem = format!("{}.{}-{:06}", self.opts.name, stamp(end), self.seq + 1);
        let result = write_pair(&self.dir, &stem, &delta, window, &self.opts).map(|()| {
            self.previous = now;
            self.since = end;
            self.seq += 1;
        });
        let result =
            result.and_then(|()| rotate(&self.dir, &self.opts.name, self.opts.keep_snapshots));
        match result {
            Ok(()) => self.last_error = None,
            Err(e) => {
                if self.last_error.as_deref() != Some(e.as_str()) {
                    eprintln!("yieldprof: snapshot {stem}: {e}");
                }
                self.last_error = Some(e);
            }
        }
    }
}

/// Writes `<stem>.folded` and `<stem>.pb.gz`: both or (as far as it can) neither, so
/// a reader never sees half a snapshot it would count again in the next one.
fn write_pair(
    dir: &Path,
    stem: &str,
    delta: &Profile,
    window: Window,
    opts: &Options,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let stacks = delta.fold(opts.metric);
    let folded = dir.join(format!("{stem}.folded"));
    write_folded(&folded, &stacks).map_err(|e| e.to_string())?;
    write_atomic(&dir.join(format!("{stem}.pb.gz")), |w| {
        pprof::write(delta, window, w)
    })
    .map_err(|e| {
        let _ = std::fs::remove_file(&folded);
        e.to_string()
    })
}

/// The `<time>-<sequence>` part of a snapshot file of `name`, if `file` is one.
fn snapshot_key<'a>(file: &'a str, name: &str) -> Option<&'a str> {
    let rest = file.strip_prefix(name)?.strip_prefix('.')?;
    let key = rest
        .strip_suffix(".pb.gz")
        .or_else(|| rest.strip_suffix(".folded"))?;
    // 20261202T151023.120Z-000007
    let (time, seq) = key.split_once("Z-")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (date, clock) = time.split_once('T')?;
    let (hms, millis) = clock.split_once('.')?;
    (date.len() == 8
        && digits(date)
        && hms.len() == 6
        && digits(hms)
        && digits(millis)
        && digits(seq))
    .then_some(key)
}

/// Deletes all but the newest `keep` snapshots of `name` in `dir`.
fn rotate(dir: &Path, name: &str, keep: usize) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut files: Vec<(String, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let key = snapshot_key(&file, name)?.to_string();
            Some((key, e.path()))
        })
        .collect();
    files.sort();
    let mut keys: Vec<&str> = files.iter().map(|(k, _)| k.as_str()).collect();
    keys.dedup();
    let Some(&oldest_kept) = keys.len().checked_sub(keep).and_then(|i| keys.get(i)) else {
        return Ok(());
    };
    let oldest_kept = oldest_kept.to_string();
    for (key, path) in &files {
        if key.as_str() < oldest_kept.as_str() {
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot delete {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_programs_snapshot_files_are_recognised() {
        let key = "20261202T151023.120Z-000007";
        assert_eq!(snapshot_key(&format!("svc.{key}.pb.gz"), "svc"), Some(key));
        assert_eq!(snapshot_key(&format!("svc.{key}.folded"), "svc"), Some(key));
        for other in [
            format!("svc-worker.{key}.pb.gz"),
            format!("svc.{key}.pb.gz.tmp123"),
            "svc.calls.folded".to_string(),
            "svc.folded".to_string(),
            format!("svc.{key}.svg"),
        ] {
            assert_eq!(snapshot_key(&other, "svc"), None, "{other}");
        }
    }

    #[test]
    fn rotation_keeps_the_newest_pairs_and_other_files() {
        let dir = std::env::temp_dir().join(format!("yieldprof-rotate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let names: Vec<String> = (1..=5)
            .flat_map(|i| {
                let stem = format!("svc.2026120{i}T000000.000Z-00000{i}");
                [format!("{stem}.folded"), format!("{stem}.pb.gz")]
            })
            .chain([
                "svc.folded".to_string(),
                "other.20261201T000000.000Z-000001.pb.gz".to_string(),
            ])
            .collect();
        for n in &names {
            std::fs::write(dir.join(n), b"x").unwrap();
        }
        rotate(&dir, "svc", 2).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "other.20261201T000000.000Z-000001.pb.gz",
                "svc.20261204T000000.000Z-000004.folded",
                "svc.20261204T000000.000Z-000004.pb.gz",
                "svc.20261205T000000.000Z-000005.folded",
                "svc.20261205T000000.000Z-000005.pb.gz",
                "svc.folded",
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
