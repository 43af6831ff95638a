use super::*;
use crate::base::site::{self, CallInfo, EpisodeSite, FrameInfo, Kind, WorkSite};
use crate::model::tree::ThreadProfile;
use crate::output::fold::Metric;
use prost::Message;
use std::collections::BTreeMap;

// `..default()`: fields added to the stats later keep their zero here.
#[allow(clippy::needless_update)]
fn node(frame: u32, parent: u32, episodes: u64, wall_ns: u64) -> NodeStats {
    NodeStats {
        frame,
        parent,
        episodes,
        wall_ns,
        ..NodeStats::default()
    }
}

#[allow(clippy::needless_update)]
fn slot(call: u32, calls: u64, ns: u64) -> SlotStats {
    SlotStats {
        call,
        calls,
        ns,
        ..SlotStats::default()
    }
}

/// Two exited threads named `worker`, each `serve` (business) → `wait_ready` (wait
/// site) with spins at line 12 and yields at line 14, plus a thread-level sleep.
fn sample_profile() -> Profile {
    // Frames 0 and 1 are the fixed thread root and `[overflow]`.
    let mut frames: Vec<FrameInfo> = site::tables().0[..2].to_vec();
    frames.push(WorkSite::new("serve", "src/app.rs", 3).info());
    frames.push(EpisodeSite::new(None, "app", "wait_ready", "src/app.rs", 10).info());
    let call = |kind, line| CallInfo {
        kind,
        file: "src/app.rs",
        line,
        column: 9,
        in_async: false,
    };
    let calls = vec![
        call(Kind::Spin, 0),
        call(Kind::Spin, 12),
        call(Kind::Yield, 14),
        call(Kind::Sleep, 30),
    ];
    let thread = |serial, scale: u64| {
        let mut root = node(0, 0, 1, 10_000 * scale);
        root.slots = vec![slot(3, 2, 500 * scale)];
        let mut wait = node(3, 2, 4, 3_000 * scale);
        wait.slots = vec![slot(1, 100 * scale, 0), slot(2, 5, 1_000 * scale)];
        ThreadProfile {
            serial,
            tid: serial as i32,
            name: "worker".to_string(),
            threads: 1,
            exited: true,
            overflowed: 0,
            reentries_skipped: 0,
            entries_after_exit: 0,
            nodes: vec![root, node(1, 0, 0, 0), node(2, 0, 2, 6_000 * scale), wait],
            site_durations: Vec::new(),
            unwaited: Vec::new(),
            counters: Default::default(),
            timeline: Default::default(),
        }
    };
    Profile::new(vec![thread(1, 1), thread(2, 2)], frames, calls)
}

fn decoded(profile: &Profile) -> proto::Profile {
    proto::Profile::decode(&raw(profile)[..]).unwrap()
}

/// The profile as written, gunzipped.
fn raw(profile: &Profile) -> Vec<u8> {
    let window = Window {
        start: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        length: Duration::from_secs(10),
    };
    let mut gz = Vec::new();
    write(profile, window, &mut gz).unwrap();
    let mut raw = Vec::new();
    io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
    raw
}

#[test]
fn the_hand_encoding_is_prosts_byte_for_byte() {
    let written = raw(&sample_profile());
    let read = proto::Profile::decode(&written[..]).unwrap();
    assert!(read.sample.len() > 3 && read.string_table.len() > 10);
    assert_eq!(written, read.encode_to_vec());
    // Negative and multi-byte varints, empty repeated fields, nested messages.
    let odd = proto::Profile {
        sample: vec![proto::Sample {
            location_id: vec![1, 300, u64::MAX],
            value: vec![-1, 0, i64::MIN, 1 << 40],
            label: vec![],
        }],
        string_table: vec![String::new(), "é".repeat(200)],
        time_nanos: -5,
        comment: vec![0, 0],
        ..proto::Profile::default()
    };
    let mut ours = Vec::new();
    odd.encode(&mut ours);
    assert_eq!(ours, odd.encode_to_vec());
    assert_eq!(proto::Profile::decode(&ours[..]).unwrap(), odd);
}

/// Folded-style stacks of every sample (root first), summed per stack for value
/// `index`.
fn stacks(p: &proto::Profile, index: usize) -> BTreeMap<String, u64> {
    let s = |i: i64| p.string_table[i as usize].as_str();
    let mut out = BTreeMap::new();
    for sample in &p.sample {
        let mut names = Vec::new();
        for &id in sample.location_id.iter().rev() {
            let loc = &p.location[id as usize - 1];
            for line in loc.line.iter().rev() {
                names.push(s(p.function[line.function_id as usize - 1].name));
            }
        }
        let v = sample.value[index] as u64;
        if v > 0 {
            *out.entry(names.join(";")).or_insert(0) += v;
        }
    }
    out
}

#[test]
fn every_sample_matches_a_folded_line_for_wall_and_calls() {
    let profile = sample_profile();
    let p = decoded(&profile);
    for (index, metric) in [(0, Metric::Wall), (1, Metric::Calls)] {
        let folded: BTreeMap<String, u64> = profile
            .fold(metric)
            .iter()
            .map(|(s, v)| (s.to_string(), v))
            .collect();
        assert_eq!(stacks(&p, index), folded, "{metric:?}");
    }
    let calls: u64 = profile.fold(Metric::Calls).iter().map(|(_, v)| v).sum();
    assert_eq!(calls, (2 + 100 + 5) + (2 + 200 + 5));
}

#[test]
fn episodes_sum_to_the_wait_sites_episodes() {
    let profile = sample_profile();
    let p = decoded(&profile);
    let episodes: i64 = p.sample.iter().map(|s| s.value[2]).sum();
    assert_eq!(episodes, 8);
    assert_eq!(profile.sites()[0].episodes, 8);
}

#[test]
fn the_string_table_starts_empty_and_holds_each_string_once() {
    let p = decoded(&sample_profile());
    assert_eq!(p.string_table[0], "");
    let mut seen = std::collections::HashSet::new();
    for s in &p.string_table {
        assert!(
            seen.insert(s.as_str()),
            "{s:?} twice in {:?}",
            p.string_table
        );
    }
    let s = |i: i64| p.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(
        types,
        [
            ("wall", "nanoseconds"),
            ("calls", "count"),
            ("episodes", "count")
        ]
    );
    assert_eq!(s(p.default_sample_type), "wall");
    assert_eq!(p.time_nanos, 1_700_000_000 * 1_000_000_000);
    assert_eq!(p.duration_nanos, 10_000_000_000);
}

#[test]
fn call_sites_are_leaf_lines_and_threads_and_kinds_are_labels() {
    let p = decoded(&sample_profile());
    let s = |i: i64| p.string_table[i as usize].as_str();
    let f = |id: u64| &p.function[id as usize - 1];
    let yield_sample = p
        .sample
        .iter()
        .find(|smp| {
            smp.label
                .iter()
                .any(|l| s(l.key) == "kind" && s(l.str) == "yield")
        })
        .expect("a yield sample");
    let labels: Vec<(&str, &str)> = yield_sample
        .label
        .iter()
        .map(|l| (s(l.key), s(l.str)))
        .collect();
    assert_eq!(labels, [("thread", "worker"), ("kind", "yield")]);
    // Two same-named threads share the sample: 5 + 5 yields, 1000 + 2000 ns.
    assert_eq!(yield_sample.value, [3_000, 10, 0]);
    // One line per location (nothing inlined), innermost first: the kind, the
    // wait site at the line of the call, serve at its own line, the thread.
    let frames: Vec<(&str, &str, i64, i64)> = yield_sample
        .location_id
        .iter()
        .map(|&id| {
            let loc = &p.location[id as usize - 1];
            assert_eq!(loc.line.len(), 1);
            let func = f(loc.line[0].function_id);
            (
                s(func.name),
                s(func.filename),
                func.start_line,
                loc.line[0].line,
            )
        })
        .collect();
    assert_eq!(
        frames,
        [
            ("[yield]", "src/app.rs", 0, 14),
            ("app::wait_ready", "src/app.rs", 10, 14),
            ("serve", "src/app.rs", 3, 3),
            ("worker", "", 0, 0),
        ]
    );
    let site = &p.location[yield_sample.location_id[1] as usize - 1];
    assert_eq!(
        s(f(site.line[0].function_id).system_name),
        "app::wait_ready"
    );
}

#[test]
fn an_empty_profile_is_a_valid_profile_without_samples() {
    let p = decoded(&Profile::default());
    assert_eq!((p.sample.len(), p.sample_type.len()), (0, 3));
}
