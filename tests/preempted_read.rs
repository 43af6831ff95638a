//! A thread preempted inside the profiler's read of its switch figures at a wait
//! call's open (rayon's caller, woken workers on its CPU: 3–8 ms queued in that read,
//! ~40 ms of a 200 ms phase read as the wait's own on-CPU time) spent that time
//! queued in the call: off the CPU, the wait's, not the profiler's. Here a busy thread
//! shares the caller's one CPU, so the caller is preempted wherever it is, often in
//! those reads. Ground truth: the caller's CPU clock and schedstat around each call.

mod clocks;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[yieldprof::instrument_wait]
fn take(m: &Mutex<u64>) {
    *m.lock().unwrap() += 1;
}

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// This thread's time runnable but waiting for a CPU, ns.
fn queued_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    text.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn time_queued_in_the_profilers_read_at_a_wait_call_is_the_waits() {
    let session = yieldprof::Session::this_thread();
    let stop = Arc::new(AtomicBool::new(false));
    let busy = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            pin(0);
            while !stop.load(Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    pin(0);
    let m = Mutex::new(0);
    let (mut cpu, mut queued, mut wall) = (0, 0, 0);
    let began = Instant::now();
    // Until the caller was queued inside its calls for 30 ms (bounded: 3 s).
    while queued < 30_000_000 && began.elapsed() < Duration::from_secs(3) {
        let (c0, q0, t0) = (clocks::cpu_ns(), queued_ns(), Instant::now());
        take(&m);
        let (c1, q1, t1) = (clocks::cpu_ns(), queued_ns(), Instant::now());
        cpu += c1 - c0;
        queued += q1 - q0;
        wall += (t1 - t0).as_nanos() as u64;
    }
    stop.store(true, Relaxed);
    busy.join().unwrap();
    let doc = session.finish().json(&yieldprof::report::Costs::current());
    let Some(site) = doc.site("take") else {
        println!("inconclusive: no lock call was slow enough to count as a wait");
        return;
    };
    let on = site.on_cpu_ns().unwrap();
    let own_on = site.own.on_cpu_ns + site.own.unexplained_ns;
    println!(
        "the caller's clocks around its calls: wall {wall}, CPU {cpu}, queued {queued} ns; \
         the site: {} episodes, wall {}, on-CPU {on}, own on-CPU {own_on}, in calls {} ns",
        site.episodes, site.wall_ns, site.in_calls_ns
    );
    if site.wall_ns < 10_000_000 {
        println!("inconclusive: the calls that counted as waits lasted under 10 ms in all");
        return;
    }
    // Within the caller's CPU clock around all its calls (the site's episodes are some
    // of them), plus 1 ms for the clocks' reads.
    assert!(
        on <= cpu + 1_000_000,
        "on-CPU {on} ns against the CPU clock's {cpu} ns"
    );
    assert!(
        own_on <= cpu + 1_000_000,
        "own on-CPU {own_on} against {cpu} ns"
    );
}
