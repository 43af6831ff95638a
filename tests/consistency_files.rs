//! Every written file agrees with the others and with itself: parts within wholes,
//! per-thread sums equal to totals (issue 26, item 4). Run where the time split is only
//! sampled (no perf counters: `YIELDPROF_FD_BUDGET=0`), on more spinning threads than
//! cores, which once showed a spin site's `[spin]` own time at 186 ms beside its on-CPU
//! time of ~0 ns: the frame's off-CPU time was estimated, its calls' was not measured,
//! and all of its own time was named `[spin]`.
//! (Own test binary: the environment is read once, at the first report.)

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use yieldprof::report::json::Document;
use yieldprof::report::text::duration;

const THREADS: usize = 3;
const EPISODES: usize = 40;
const SPIN: Duration = Duration::from_millis(2);

/// Spins for `SPIN` (preempted now and then: more threads than cores), then sleeps a
/// little: own time on and off the CPU, and a timed call.
#[yieldprof::instrument_wait]
fn spin_then_nap() {
    let start = Instant::now();
    while start.elapsed() < SPIN {
        std::hint::spin_loop();
    }
    std::thread::sleep(Duration::from_micros(100));
}

/// `1.23 ms` → ns, as `duration` writes it.
fn parse_duration(text: &str) -> u64 {
    let (n, unit) = text.trim().split_once(' ').expect(text);
    let n: f64 = n.parse().expect(text);
    let scale = match unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => panic!("unit of {text}"),
    };
    (n * scale).round() as u64
}

/// Folded lines as (frames, value).
fn folded(text: &str) -> Vec<(Vec<String>, u64)> {
    text.lines()
        .map(|l| {
            let (stack, v) = l.rsplit_once(' ').expect(l);
            let frames = stack.split(';').map(str::to_string).collect();
            (frames, v.parse().expect(l))
        })
        .collect()
}

/// The flame graph's frames: name and value, from each `<title>`.
fn svg_frames(svg: &str) -> Vec<(String, u64)> {
    svg.split("<title>")
        .skip(1)
        .filter_map(|t| {
            let t = &t[..t.find("</title>")?];
            let (head, value) = t.rsplit_once(" (")?;
            let value: u64 = value.split(' ').next()?.replace(',', "").parse().ok()?;
            let name = head.split(" [").next()?.to_string();
            Some((name, value))
        })
        .collect()
}

#[test]
fn every_written_file_keeps_parts_within_wholes() {
    std::env::set_var("YIELDPROF_FD_BUDGET", "0");
    std::thread::scope(|s| {
        for t in 0..THREADS {
            std::thread::Builder::new()
                .name(format!("spinner-{t}"))
                .spawn_scoped(s, || {
                    for _ in 0..EPISODES {
                        spin_then_nap();
                    }
                })
                .unwrap();
        }
    });
    let dir = std::env::temp_dir().join(format!("yieldprof-consistency-{}", std::process::id()));
    let profile = yieldprof::snapshot();
    let written = profile.write(&dir, "run").expect("files written");
    let file = |ext: &str| {
        let p = written
            .iter()
            .find(|p| p.to_string_lossy().ends_with(ext))
            .unwrap_or_else(|| panic!("no {ext} in {written:?}"));
        std::fs::read_to_string(p).unwrap()
    };

    // The JSON against itself.
    let doc: Document = serde_json::from_str(&file("run.json")).unwrap();
    assert_eq!(doc.inconsistencies(), Vec::<String>::new());
    let site = doc
        .sites
        .iter()
        .find(|s| s.name.ends_with("spin_then_nap"))
        .expect("the site");
    assert_eq!(site.episodes, (THREADS * EPISODES) as u64);
    let on = site.time.on_cpu_ns.map(|c| c.value);
    println!("site: own {:?}, time {:?}", site.own, site.time);
    if let Some(on) = on {
        // The shape that went wrong: `[spin]` within on-CPU, to rounding.
        assert!(site.own.spin_ns <= on + on / 100 + 1_000, "{site:#?}");
    }

    // The folded stacks against the JSON: each thread's lines sum to its wall time, each
    // own-time leaf of the site to the JSON's figure.
    let lines = folded(&file("run.folded"));
    let mut by_root: BTreeMap<&str, u64> = BTreeMap::new();
    for (frames, v) in &lines {
        *by_root.entry(frames[0].as_str()).or_default() += v;
    }
    for t in doc
        .threads
        .iter()
        .filter(|t| t.name.starts_with("spinner-"))
    {
        assert_eq!(by_root.get(t.name.as_str()), Some(&t.wall_ns), "{}", t.name);
    }
    let leaf = |name: &str| -> u64 {
        lines
            .iter()
            .filter(|(f, _)| f.len() >= 2 && f[f.len() - 2].ends_with("spin_then_nap"))
            .filter(|(f, _)| f[f.len() - 1] == name)
            .map(|(_, v)| v)
            .sum()
    };
    assert_eq!(leaf("[spin]"), site.own.spin_ns);
    assert_eq!(leaf("[off-cpu]"), site.own.off_cpu_ns);
    assert_eq!(leaf("[unexplained]"), site.own.unexplained_ns);
    let through_site: u64 = lines
        .iter()
        .filter(|(f, _)| f.iter().any(|x| x.ends_with("spin_then_nap")))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(through_site, site.wall_ns);

    // The flame graph against the folded stacks: each frame name's total.
    let svg = svg_frames(&file("run.svg"));
    for name in ["[spin]", "[off-cpu]", "[sleep]"] {
        let in_svg: u64 = svg.iter().filter(|(n, _)| n == name).map(|(_, v)| v).sum();
        let in_folded: u64 = lines
            .iter()
            .filter(|(f, _)| f.last().map(String::as_str) == Some(name))
            .map(|(_, v)| v)
            .sum();
        assert_eq!(in_svg, in_folded, "{name}");
    }
    let site_frame: u64 = svg
        .iter()
        .filter(|(n, _)| n.ends_with("spin_then_nap"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(site_frame, site.wall_ns);

    // The summary against the JSON, and its own parts within its wholes.
    let summary = file("run.txt");
    let at = summary
        .find("spin_then_nap  (")
        .expect("the site in the summary");
    let block: Vec<&str> = summary[at..].lines().take(10).collect();
    let time = block
        .iter()
        .find_map(|l| l.trim().strip_prefix("time: on-CPU "))
        .map(|t| t.split(',').next().unwrap().trim_start_matches('~'));
    let own = block
        .iter()
        .find_map(|l| l.trim().strip_prefix("own time outside calls: "));
    if let (Some(on_text), Some(own)) = (time, own) {
        let shown_on = parse_duration(on_text);
        for part in own.split(", ") {
            let (name, d) = part.split_once(' ').unwrap();
            if name == "[spin]" || name == "[on-cpu]" {
                // Three significant digits each.
                assert!(
                    parse_duration(d) <= shown_on + shown_on / 100 + 1_000,
                    "{name} {d} > on-CPU {on_text}:\n{}",
                    block.join("\n")
                );
            }
        }
        assert!(
            own.contains(&format!("[spin] {}", duration(site.own.spin_ns)))
                || site.own.spin_ns == 0,
            "{own}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
