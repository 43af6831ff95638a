//! The flame graph as a person sees it: headless Chromium renders the SVG, and the
//! screenshot must show each wait kind in its colour. Chromium comes from Debian's
//! `chromium` package: the test is `#[ignore]`d (listed as ignored, never passed
//! without a browser); `.ci/run` installs Chromium and runs it with `--ignored`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[yieldprof::instrument_wait]
fn spins_for(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

#[yieldprof::instrument_wait]
fn yields_for(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::thread::yield_now();
    }
}

#[yieldprof::instrument_wait]
fn sleeps_for(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::thread::sleep(Duration::from_micros(100));
    }
}

fn work_for(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::black_box(0u64);
    }
}

fn browser() -> Option<&'static str> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
}

/// Pixels of exactly `rgb` in an RGBA or RGB screenshot.
fn count(png: &[u8], rgb: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let step = info.color_type.samples();
    buf[..info.buffer_size()]
        .chunks(step)
        .filter(|p| p[..3] == rgb)
        .count()
}

#[test]
#[ignore = "needs Chromium (apt-get install chromium); .ci/run runs it"]
fn chromium_shows_each_wait_kind_in_its_colour() {
    let chromium = browser().expect("no Chromium: apt-get install chromium");
    let d = Duration::from_millis(40);
    // A `[spin]` frame is drawn only for the spin's time on the CPU: on a loaded
    // machine a preempted spin's time is `[off-cpu]`. Record again (at most 5 times)
    // until at least half of the spin was on the CPU, enough for its fifth of the graph.
    let Some(profile) = (1..=5).find_map(|attempt| {
        let session = yieldprof::Session::this_thread();
        spins_for(d);
        yields_for(d);
        sleeps_for(d);
        work_for(d);
        let profile = session.finish();
        let spun = profile.site("spins_for").map_or(0, |s| s.spin_ns());
        let enough = spun as u128 * 2 >= d.as_nanos();
        if !enough {
            println!("attempt {attempt}: the spin was on the CPU {spun} ns of {d:?}");
        }
        enough.then_some(profile)
    }) else {
        println!("inconclusive: the spin was preempted for over half its time in 5 recordings");
        return;
    };
    let dir = std::env::temp_dir().join(format!("yieldprof-browser-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let paths = profile.write(&dir, "kinds").expect("written");
    let svg = &paths[1];
    let shot = dir.join("shot.png");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1200,500",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", svg.display()))
        .output()
        .expect("chromium runs");
    assert!(
        shot.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    for (kind, rgb) in [
        ("[spin] vermillion", [0xd5, 0x5e, 0x00]),
        ("[yield] orange", [0xe6, 0x9f, 0x00]),
        ("[sleep] blue", [0x00, 0x72, 0xb2]),
        ("[work] green", [0x00, 0x9e, 0x73]),
    ] {
        // Each kind is about a fifth of a 1200-px-wide graph, 16 px high.
        let n = count(&png, rgb);
        assert!(
            n >= 1_000,
            "{kind}: only {n} pixels of rgb{rgb:?} in {}",
            shot.display()
        );
    }
}
