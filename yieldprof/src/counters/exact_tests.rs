//! Reading the sources: schedstat's fields, the off-CPU clock.
use super::*;

#[test]
fn run_delay_is_the_second_schedstat_field() {
    assert_eq!(
        parse_run_delay("192113020 66597883 2025\n"),
        Some(66_597_883)
    );
    assert_eq!(parse_run_delay("192113020\n"), None);
}

#[test]
fn the_off_cpu_clock_stands_still_while_the_thread_runs() {
    let file = open_schedstat();
    let raw = file.as_ref().map(|f| f.as_raw_fd());
    let a = read_sources(None, raw, None);
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_millis(5) {
        std::hint::spin_loop();
    }
    let b = read_sources(None, raw, None);
    let elapsed = t.elapsed().as_nanos() as u64;
    let d = a.until(&b);
    // Running, it moves by the clock reads' cost and by time the hypervisor
    // stole from the vCPU; off the CPU (a switch), by the time away.
    if d.involuntary == 0 && d.voluntary == 0 {
        assert!(d.off_ns < elapsed / 2, "{d:?} in {elapsed} ns");
    }
}
