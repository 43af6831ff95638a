//! What the output says, read back as a user's tools read it: flame graphs parsed as
//! SVG (colours, legend, labels, hover figures per thread), file names unique per
//! process, and nothing written with recording off.

mod child_process;

use child_process::{names, run, temp_dir};
use yieldprof::report::Metric;
use yieldprof::Options;

/// One drawn frame of an inferno SVG: its name, hover title, fill and label.
#[derive(Debug)]
struct Frame {
    name: String,
    title: String,
    fill: String,
    label: String,
    /// Its start and width in samples.
    x: u64,
    w: u64,
}

/// Every `<g><title>…</title><rect … fill="…"/><text …>…</text></g>` of `svg`.
fn frames(svg: &str) -> Vec<Frame> {
    let between = |s: &str, a: &str, b: &str| -> String {
        let from = s.find(a).map(|i| i + a.len()).unwrap_or(s.len());
        let to = s[from..].find(b).map_or(s.len(), |i| from + i);
        s[from..to].to_string()
    };
    svg.split("<g><title>")
        .skip(1)
        .map(|g| {
            let title = g.split("</title>").next().unwrap().to_string();
            let name = title[..title.rfind(" (").unwrap()].replace("&amp;", "&");
            let text = &g[g.find("<text").unwrap()..];
            Frame {
                name,
                fill: between(g, "fill=\"", "\""),
                label: between(text, ">", "</text>"),
                x: between(g, "fg:x=\"", "\"").parse().unwrap(),
                w: between(g, "fg:w=\"", "\"").parse().unwrap(),
                title,
            }
        })
        .collect()
}

/// The subtitle's lines (`<text id="subtitle">`, then `subtitle2`, …) and their `y`.
fn subtitle_lines(svg: &str) -> Vec<(String, f64)> {
    svg.match_indices("<text id=\"subtitle")
        .map(|(at, _)| {
            let tag = &svg[at..at + svg[at..].find('>').unwrap()];
            let y = tag
                .split(" y=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let from = at + tag.len() + 1;
            let text = &svg[from..from + svg[from..].find('<').unwrap()];
            (text.replace("&amp;", "&"), y.parse().unwrap())
        })
        .collect()
}

/// The whole subtitle: its lines joined.
fn subtitle(svg: &str) -> String {
    let lines: Vec<String> = subtitle_lines(svg).into_iter().map(|(l, _)| l).collect();
    assert!(!lines.is_empty(), "a subtitle");
    lines.join(" ")
}

fn draw(lines: &[&str]) -> String {
    let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let mut svg = Vec::new();
    yieldprof::report::flamegraph(&lines, Metric::Wall, "t", &mut svg).unwrap();
    String::from_utf8(svg).unwrap()
}

#[test]
fn each_kind_has_its_own_colour_and_the_legend_lists_exactly_those_drawn() {
    let svg = draw(&[
        "main;poll;[spin] 10",
        "main;poll;[on-cpu] 10",
        "main;poll;[profiler] 10",
        "main;poll;[off-cpu] 10",
        "main;poll;[yield] 10",
        "main;recv;[channel] 10",
        "main;recv;[condvar] 10",
        "main;[work] 10",
    ]);
    let frames = frames(&svg);
    let fill = |name: &str| {
        frames
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} drawn: {frames:#?}"))
            .fill
            .clone()
    };
    let kinds = [
        "[spin]",
        "[on-cpu]",
        "[profiler]",
        "[off-cpu]",
        "[yield]",
        "[channel]",
        "[condvar]",
        "[work]",
    ];
    let fills: Vec<String> = kinds.iter().map(|k| fill(k)).collect();
    for (i, a) in fills.iter().enumerate() {
        for (j, b) in fills.iter().enumerate().skip(i + 1) {
            assert_ne!(a, b, "{} and {} share a colour", kinds[i], kinds[j]);
        }
    }
    // The profiler's own on-CPU time is not drawn in spin's colour.
    assert_eq!(fill("[spin]"), "rgb(213,94,0)");
    assert_eq!(fill("[on-cpu]"), "rgb(255,170,187)");
    // The legend: exactly the fixed colours drawn, `[off-cpu]` and `[profiler]` included.
    let legend = subtitle(&svg);
    let listed: Vec<&str> = legend
        .trim_start_matches("colours: ")
        .split(';')
        .next()
        .unwrap()
        .split(", ")
        .map(|e| e.split(' ').next().unwrap())
        .collect();
    let mut want = kinds.to_vec();
    let mut got = listed.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want, "legend: {legend}");
    // A graph without them names none of them.
    let legend = subtitle(&draw(&["main;[work] 1"]));
    assert_eq!(legend, "colours: [work] green; other frames aqua");
}

/// The number in ` key="…"` of the first tag at `svg[at..]`.
fn attr(svg: &str, at: usize, key: &str) -> f64 {
    let tag = &svg[at..at + svg[at..].find('>').unwrap()];
    let pat = format!(" {key}=\"");
    tag.split(&pat)
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_long_subtitle_goes_on_lines_that_fit_and_the_graph_moves_down_for_them() {
    // Every coloured kind, a frame deep enough to reach the top of the graph, and past
    // 8 192 frames: the legend and the merge note together are some 450 characters.
    let mut lines = vec![
        "main;a;b;c;d;e;f;g;h;i;j;poll;[spin] 1000000".to_string(),
        "main;poll;[overflow] 1".to_string(),
    ];
    for kind in [
        "yield",
        "async-yield",
        "backoff",
        "on-cpu",
        "profiler",
        "sleep",
        "park",
        "lock",
        "condvar",
        "channel",
        "join",
        "barrier",
        "off-cpu",
        "unexplained",
        "work",
    ] {
        lines.push(format!("main;poll;[{kind}] 1000"));
    }
    lines.extend((0..10_000).map(|i| format!("main;many;n{i:05};[work] 1")));
    let mut svg = Vec::new();
    yieldprof::report::flamegraph(&lines, Metric::Wall, "t", &mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    let sub = subtitle_lines(&svg);
    assert!(sub.len() >= 3, "{sub:#?}");
    // Each line fits the 1200-pixel graph: inferno's text is 0.59 em of 12 px, 7.08 px a
    // character, in 1180 px; the first line is where inferno put it.
    for (line, _) in &sub {
        assert!(line.chars().count() * 708 / 100 <= 1180, "{line}");
    }
    assert_eq!(sub[0].1, 48.0);
    let text = subtitle(&svg);
    assert!(text.contains("merged into their parents"), "{text}");
    assert!(
        text.contains("[unexplained] sand") && text.ends_with("other frames aqua"),
        "{text}"
    );
    // Below the last line: the frames (the deepest one included), then the details line,
    // all within the image.
    let last = sub.last().unwrap().1;
    let frames_at = svg.find("<svg id=\"frames\"").unwrap();
    let dy = attr(&svg, frames_at, "y");
    let top = svg[frames_at..]
        .match_indices("<rect ")
        .map(|(i, _)| dy + attr(&svg, frames_at + i, "y"))
        .fold(f64::MAX, f64::min);
    let bottom = svg[frames_at..]
        .match_indices("<rect ")
        .map(|(i, _)| dy + attr(&svg, frames_at + i, "y") + attr(&svg, frames_at + i, "height"))
        .fold(0.0, f64::max);
    assert!(
        top > last,
        "top frame at {top}, last subtitle line at {last}"
    );
    let details = attr(&svg, svg.find("<text id=\"details\"").unwrap(), "y");
    let height = attr(&svg, svg.find("<svg ").unwrap(), "height");
    assert!(
        bottom < details && details < height,
        "{bottom} {details} {height}"
    );
    assert!(svg.contains(&format!("viewBox=\"0 0 1200 {height}\"")));
}

#[test]
fn a_cut_label_keeps_the_function_name_not_the_module_path() {
    // The site is 15 % of a 1200-pixel graph: room for ~25 of its 52 characters.
    let site = "server::connections::queue::backpressure::wait_ready";
    let svg = draw(&[&format!("main;{site};[spin] 15"), "main;[work] 85"]);
    let frames = frames(&svg);
    let frame = frames.iter().find(|f| f.name == site).unwrap();
    assert!(
        frame.label.starts_with("..") && frame.label.ends_with("::wait_ready"),
        "label {:?}",
        frame.label
    );
    assert!(frame.label.len() < site.len());
}

#[yieldprof::instrument_wait]
fn output_wait() {
    std::thread::yield_now();
}

#[test]
fn a_frame_under_a_thread_carries_that_threads_figures() {
    let run = |name: &str, episodes: usize| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || (0..episodes).for_each(|_| output_wait()))
            .unwrap()
            .join()
            .unwrap();
    };
    run("output-three", 3);
    run("output-seven", 7);
    let dir = std::env::temp_dir().join(format!("yieldprof-output-hover-{}", std::process::id()));
    let guard = Options::from_env().out_dir(&dir).name("hover").init();
    guard.write().unwrap();
    let svg = std::fs::read_to_string(dir.join("hover.svg")).unwrap();
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
    // The site's frame under each thread: within the thread frame's span.
    let frames = frames(&svg);
    for (thread, n) in [("output-three", 3), ("output-seven", 7)] {
        let t = frames.iter().find(|f| f.name == thread).unwrap();
        let site = frames
            .iter()
            .find(|f| f.name == "output::output_wait" && t.x <= f.x && f.x < t.x + t.w)
            .unwrap();
        let want = format!("; this thread, this path: {n} episodes, ");
        assert!(
            site.title.contains(&want) && site.title.contains("calls: yield "),
            "{thread}: {}",
            site.title
        );
    }
}

#[yieldprof::instrument_wait]
fn wait_until(long: bool) {
    if long {
        std::thread::sleep(std::time::Duration::from_millis(2));
    } else {
        std::thread::yield_now();
    }
}

/// A duration as the hover text writes it (`1.40 ms`, `850.0 µs`), in ns.
fn ns(text: &str) -> f64 {
    let (n, unit) = text.trim_start_matches('~').split_once(' ').unwrap();
    let scale = match unit {
        "s" => 1e9,
        "ms" => 1e6,
        "µs" => 1e3,
        "ns" => 1.0,
        other => panic!("unit {other}"),
    };
    n.parse::<f64>().unwrap() * scale
}

#[test]
fn a_site_reached_by_two_paths_shows_each_paths_own_figures() {
    // Ground truth: 20 sleeps of at least 2 ms on one path, 400 yields on the other,
    // each call timed by the test's own clock. A yield's length is the scheduler's: on
    // a loaded machine it can last as long as the sleeps, and then the two paths'
    // means do not tell a path's own figures from the site's; run again (3 at most).
    for attempt in 1..=3 {
        let (hover, clock) = two_paths(attempt);
        let [(long, long_mean, long_p99, long_text), (short, short_mean, _, short_text)] = hover;
        println!("array::recv: {long_text}\nzero::recv: {short_text}\nclock means: {clock:?} ns");
        assert_eq!(long, 20, "{long_text}");
        assert_eq!(short, 400, "{short_text}");
        assert!(long_mean >= 2e6 && long_p99 >= 2e6, "{long_text}");
        // An episode lies inside the call the test timed: never a longer mean (1 % for
        // the hover's three digits and the two clocks' scales).
        assert!(
            long_mean <= clock[0] * 1.01,
            "{long_text}: clock {} ns",
            clock[0]
        );
        assert!(
            short_mean <= clock[1] * 1.01,
            "{short_text}: clock {} ns",
            clock[1]
        );
        // Where the paths' own means differ twofold, each hover shows its own side.
        if clock[0] >= 2.0 * clock[1] {
            assert!(short_mean < long_mean, "{short_text} vs {long_text}");
            return;
        }
        if clock[1] >= 2.0 * clock[0] {
            assert!(long_mean < short_mean, "{long_text} vs {short_text}");
            return;
        }
    }
    println!("inconclusive: the yields lasted about as long as the sleeps in 3 runs");
}

/// One path's hover figures: episodes, mean and p99 in ns, and the text they are in.
type PathFigures = (u64, f64, f64, String);

/// Path figures read off the hover of `output::wait_until` under `array::recv` and
/// `zero::recv`, and the test's own mean of the calls on each path, in ns.
fn two_paths(attempt: u32) -> ([PathFigures; 2], [f64; 2]) {
    let name = format!("output-paths-{attempt}");
    let clock = std::thread::Builder::new()
        .name(name.clone())
        .spawn(|| {
            let timed = |long: bool, n: u32| {
                let t = std::time::Instant::now();
                (0..n).for_each(|_| wait_until(long));
                t.elapsed().as_nanos() as f64 / f64::from(n)
            };
            let long = {
                yieldprof::frame!("array::recv");
                timed(true, 20)
            };
            yieldprof::frame!("zero::recv");
            [long, timed(false, 400)]
        })
        .unwrap()
        .join()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("yieldprof-output-paths-{}", std::process::id()));
    let guard = Options::from_env().out_dir(&dir).name("paths").init();
    guard.write().unwrap();
    let svg = std::fs::read_to_string(dir.join("paths.svg")).unwrap();
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
    let frames = frames(&svg);
    let within = |outer: &Frame, name: &str| -> &Frame {
        frames
            .iter()
            .find(|f| f.name == name && outer.x <= f.x && f.x < outer.x + outer.w)
            .unwrap_or_else(|| panic!("{name} under {}", outer.name))
    };
    let thread = frames.iter().find(|f| f.name == name).unwrap();
    let figures = |parent: &str| {
        let site = within(within(thread, parent), "output::wait_until");
        let text = site.title.split("; this thread, this path: ").nth(1);
        let text = text.unwrap_or_else(|| panic!("{}", site.title)).to_string();
        let field = |key: &str| {
            text.split(key)
                .nth(1)
                .unwrap()
                .split([',', ';'])
                .next()
                .unwrap()
                .to_string()
        };
        let episodes: u64 = text.split(' ').next().unwrap().parse().unwrap();
        (episodes, ns(&field("mean ")), ns(&field("p99 ")), text)
    };
    ([figures("array::recv"), figures("zero::recv")], clock)
}

#[test]
fn child() {
    let Some(role) = child_process::role() else {
        return;
    };
    let dir = std::env::var("OUTPUT_DIR").unwrap();
    match role.as_str() {
        // A program that names nothing: its files are `<exe>.<pid>.*`.
        "unnamed" => {
            let guard = Options::from_env().out_dir(&dir).init();
            output_wait();
            drop(guard);
            println!("pid {}", std::process::id());
        }
        "named" => {
            let guard = Options::from_env()
                .out_dir(&dir)
                .name("kept")
                .snapshot_every(std::time::Duration::from_millis(10))
                .init();
            output_wait();
            std::thread::sleep(std::time::Duration::from_millis(50));
            println!("flushed {:?}", yieldprof::flush().unwrap());
            drop(guard);
        }
        // A test binary's worth of threads, each with its own name and timeline.
        "threads" => {
            let guard = Options::from_env().out_dir(&dir).name("many").init();
            let threads: Vec<_> = (0..THREADS)
                .map(|i| {
                    std::thread::Builder::new()
                        .name(format!("test-{i}"))
                        .spawn(|| (0..EPISODES).for_each(|_| output_wait()))
                        .unwrap()
                })
                .collect();
            threads.into_iter().for_each(|t| t.join().unwrap());
            drop(guard);
        }
        // The trial's largest runs: 10 000 threads of one tiny episode each, and two
        // that waited long.
        "crowd" => {
            let guard = Options::from_env().out_dir(&dir).name("crowd").init();
            let big: Vec<_> = ["big-a", "big-b"]
                .map(|name| {
                    std::thread::Builder::new()
                        .name(name.into())
                        .spawn(big_wait)
                        .unwrap()
                })
                .into();
            for batch in 0..CROWD / 16 {
                let threads: Vec<_> = (0..16)
                    .map(|i| {
                        std::thread::Builder::new()
                            .name(format!("crowd-{}", batch * 16 + i))
                            .spawn(output_wait)
                            .unwrap()
                    })
                    .collect();
                threads.into_iter().for_each(|t| t.join().unwrap());
            }
            big.into_iter().for_each(|t| t.join().unwrap());
            drop(guard);
        }
        other => panic!("unknown role {other}"),
    }
    std::process::exit(0);
}

#[test]
fn processes_of_one_program_write_files_of_their_own() {
    let dir = temp_dir("output-unique");
    let env = [("OUTPUT_DIR", dir.to_str().unwrap())];
    let pids: Vec<String> = (0..2)
        .map(|_| {
            let exit = run("unnamed", &env);
            assert_eq!(exit.code, Some(0), "{exit:?}");
            exit.stdout.split("pid ").nth(1).unwrap().trim().to_string()
        })
        .collect();
    assert_ne!(pids[0], pids[1]);
    let exe = std::env::current_exe().unwrap();
    let exe = exe.file_stem().unwrap().to_string_lossy();
    let files = names(&dir);
    for pid in &pids {
        for ext in ["folded", "svg", "json", "txt", "pb.gz"] {
            let want = format!("{exe}.{pid}.{ext}");
            assert!(files.contains(&want), "{want} in {files:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_recording_off_nothing_is_written_and_nothing_overwritten() {
    let dir = temp_dir("output-off");
    std::fs::write(dir.join("kept.json"), "a real profile").unwrap();
    let env = [("OUTPUT_DIR", dir.to_str().unwrap()), ("YIELDPROF", "0")];
    let exit = run("named", &env);
    assert_eq!(exit.code, Some(0), "{exit:?}");
    assert!(exit.stdout.contains("flushed []"), "{exit:?}");
    assert!(exit.stderr.contains("no files written"), "{exit:?}");
    assert_eq!(names(&dir), ["kept.json"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("kept.json")).unwrap(),
        "a real profile"
    );
    // The same program with recording on writes its files.
    let exit = run("named", &env[..1]);
    assert_eq!(exit.code, Some(0), "{exit:?}");
    let files = names(&dir);
    assert!(
        files.contains(&"kept.folded".to_string()) && files.contains(&"snapshots".to_string()),
        "{files:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const THREADS: usize = 300;
const EPISODES: usize = 400;

#[test]
fn hundreds_of_threads_write_at_most_10_mb_and_the_trace_says_what_it_cut() {
    let dir = temp_dir("output-bounded");
    let exit = run("threads", &[("OUTPUT_DIR", dir.to_str().unwrap())]);
    assert_eq!(exit.code, Some(0), "{exit:?}");
    let total: u64 = names(&dir)
        .iter()
        .map(|n| std::fs::metadata(dir.join(n)).unwrap().len())
        .sum();
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("many.trace.json")).unwrap()).unwrap();
    let other = &trace["otherData"];
    let figure = |k: &str| other[k].as_str().unwrap().parse::<u64>().unwrap();
    let written = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .count() as u64;
    println!("{THREADS} threads: {total} bytes of reports; trace {other}");
    // Ground truth: every episode the children made was recorded.
    assert!(
        figure("episodes_recorded") >= (THREADS * EPISODES) as u64,
        "{other}"
    );
    assert_eq!(written, figure("episodes_limit"), "{other}");
    assert!(figure("episodes_cut") > 0, "{other}");
    assert!(total <= 10 << 20, "{total} bytes in {:?}", names(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

const CROWD: usize = 10_000;

#[yieldprof::instrument_wait]
fn big_wait() {
    std::thread::sleep(std::time::Duration::from_millis(300));
}

#[test]
fn ten_thousand_tiny_threads_do_not_crowd_out_the_wide_wait_sites() {
    let dir = temp_dir("output-crowd");
    // Every thread listed (a written report merges those past 256 by default), so the
    // flame graph's own bound is what keeps it readable.
    let exit = run(
        "crowd",
        &[
            ("OUTPUT_DIR", dir.to_str().unwrap()),
            ("YIELDPROF_REPORT_THREADS", "all"),
        ],
    );
    assert_eq!(exit.code, Some(0), "{exit:?}");
    let svg = std::fs::read_to_string(dir.join("crowd.svg")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let frames = frames(&svg);
    let note = subtitle(&svg);
    assert!(note.contains("merged into their parents"), "{note}");
    // The headline, first and whole: `10003 threads, …% of it waiting;`.
    let first = &subtitle_lines(&svg)[0].0;
    assert!(
        first.contains(" threads, ") && first.contains(" of it waiting;"),
        "{first}"
    );
    // Each big thread's site, under that thread, with its own figures.
    for thread in ["big-a", "big-b"] {
        let t = frames
            .iter()
            .find(|f| f.name == thread)
            .unwrap_or_else(|| panic!("{thread} drawn; {note}"));
        let site = frames
            .iter()
            .find(|f| f.name == "output::big_wait" && t.x <= f.x && f.x < t.x + t.w)
            .unwrap_or_else(|| panic!("big_wait drawn under {thread}; {note}"));
        assert!(site.title.contains("1 episode, "), "{}", site.title);
    }
    // The tiny threads merged into one frame, which says how many.
    let crowd = frames
        .iter()
        .find(|f| f.name.contains(" threads ≤ "))
        .unwrap_or_else(|| panic!("the tiny threads merged; {note}"));
    let merged: usize = crowd.name[1..].split(' ').next().unwrap().parse().unwrap();
    assert!(merged >= CROWD / 2, "{}", crowd.name);
}
