//! `yieldprof probe`: the machine probe, shortened, with its costs saved.

use std::process::Command;

#[test]
fn the_probe_prints_every_primitive_and_saves_the_costs() {
    let dir = std::env::temp_dir().join(format!("yieldprof-cli-probe-{}", std::process::id()));
    let saved = dir.join("machine.json");
    let out = Command::new(env!("CARGO_BIN_EXE_yieldprof"))
        .args(["probe", "--save", "--seconds", "0.2"])
        .env("YIELDPROF_MACHINE", &saved)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for primitive in yieldprof::probe::PRIMITIVES {
        assert!(stdout.contains(primitive), "{primitive}: {stdout}");
    }
    assert!(
        stdout.ends_with(&format!("saved: {}\n", saved.display())),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.contains("yieldprof-machine/1"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_probe_time_that_is_not_positive_is_a_usage_error() {
    for bad in ["0", "-1", "soon", "inf"] {
        let out = Command::new(env!("CARGO_BIN_EXE_yieldprof"))
            .args(["probe", "--seconds", bad])
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains("is not a positive number of seconds"),
            "{stderr}"
        );
    }
}
