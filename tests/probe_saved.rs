//! A probe saved on this host is what later reports use and cite; a saved probe from
//! another host is not, and a report without one says which costs are defaults.

mod child_process;

use std::time::Duration;
use yieldprof::report::Costs;

/// The dispatcher: in a child, prints the costs its reports use, as the summary and the
/// JSON carry them.
#[test]
fn child() {
    if child_process::role().is_none() {
        return;
    }
    let costs = Costs::current();
    let doc = yieldprof::snapshot().json(&costs);
    println!("source: {}", costs.source);
    println!("json source: {}", doc.costs.source);
    println!("yield_ns: {}", costs.yield_ns);
    println!("costs: {costs}");
}

fn line<'a>(out: &'a str, key: &str) -> &'a str {
    // The harness may print `test child ... ` before the first line.
    out.lines()
        .find_map(|l| l.split_once(key).map(|(_, v)| v))
        .unwrap_or_else(|| panic!("no {key:?} in {out}"))
}

#[test]
fn a_later_report_on_this_host_uses_and_cites_the_saved_probe() {
    let dir = child_process::temp_dir("probe-saved");
    let path = dir.join("machine.json");
    let machine = yieldprof::probe::run_for(Duration::from_millis(2));
    machine.save(&path).unwrap();
    let saved = Costs::from_machine(&machine);

    let env = [("YIELDPROF_MACHINE", path.to_str().unwrap())];
    let out = child_process::run("report", &env);
    assert_eq!(out.code, Some(0), "{out:?}");
    let source = line(&out.stdout, "source: ");
    assert!(
        source.starts_with("probe saved ") && source.ends_with(&format!("({})", path.display())),
        "{source}"
    );
    assert_eq!(line(&out.stdout, "json source: "), source);
    assert_eq!(line(&out.stdout, "yield_ns: "), saved.yield_ns.to_string());

    // The same file from another host does not apply: a quick estimate, marked so.
    let text = std::fs::read_to_string(&path).unwrap();
    let kernel = text
        .lines()
        .find(|l| l.contains("\"kernel\""))
        .expect("the host's kernel is saved");
    std::fs::write(
        &path,
        text.replace(kernel, "    \"kernel\": \"0.0.0-elsewhere\","),
    )
    .unwrap();
    let out = child_process::run("report", &env);
    assert_eq!(line(&out.stdout, "source: "), "quick estimate");
    assert!(
        line(&out.stdout, "costs: ").contains("switch 1.0 µs (default)"),
        "{}",
        out.stdout
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_saved_probe_that_cannot_be_used_is_named_with_its_reason() {
    let dir = child_process::temp_dir("probe-saved-bad");
    let path = dir.join("machine.json");
    let machine = yieldprof::probe::run_for(Duration::from_millis(2));
    machine.save(&path).unwrap();
    let good = std::fs::read_to_string(&path).unwrap();
    let spin = good
        .lines()
        .find(|l| l.contains("\"spin_ns\""))
        .expect("the spin cost is saved");
    let cases = [
        (
            good[..good.len() / 2].to_string(),
            "unexpected end of the text",
        ),
        (good.replace(spin, "  \"spin_ns\": -1.0,"), "spin_ns is -1"),
    ];
    for (text, reason) in cases {
        std::fs::write(&path, &text).unwrap();
        let out = child_process::run("report", &[("YIELDPROF_MACHINE", path.to_str().unwrap())]);
        assert_eq!(line(&out.stdout, "source: "), "quick estimate", "{text}");
        let said: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("yieldprof: "))
            .collect();
        assert_eq!(said.len(), 1, "{out:?}");
        assert!(
            said[0].starts_with(&format!("yieldprof: {}: ", path.display()))
                && said[0].contains(reason)
                && said[0].ends_with("; using a quick estimate"),
            "{said:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
