//! Channel throughput, built twice by run.sh: against flume with its wait paths
//! annotated and against the same copy untouched. Producers send a fixed number of
//! messages to one receiver (this thread); prints `case messages-per-second`, one line a
//! case. Nothing is written: the annotated build records and exits.
use flume::{bounded, unbounded, Receiver, Sender};
use std::time::Instant;

/// Messages per case: about 0.1-0.5 s each on a 2-core VM, so a round stays short.
const CASES: [(&str, Option<usize>, usize, usize); 6] = [
    ("bounded(0) 1 producer", Some(0), 1, 40_000),
    ("bounded(0) 4 producers", Some(0), 4, 40_000),
    ("bounded(1) 1 producer", Some(1), 1, 100_000),
    ("bounded(1) 4 producers", Some(1), 4, 100_000),
    ("unbounded 1 producer", None, 1, 1_000_000),
    ("unbounded 4 producers", None, 4, 1_000_000),
];

fn run(cap: Option<usize>, producers: usize, messages: usize) -> f64 {
    let (tx, rx): (Sender<usize>, Receiver<usize>) = match cap {
        Some(n) => bounded(n),
        None => unbounded(),
    };
    let each = messages / producers;
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..producers {
            let tx = tx.clone();
            s.spawn(move || {
                for i in 0..each {
                    tx.send(i).unwrap();
                }
            });
        }
        drop(tx);
        let mut got = 0;
        while rx.recv().is_ok() {
            got += 1;
        }
        assert_eq!(got, each * producers);
    });
    (each * producers) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    for (name, cap, producers, messages) in CASES {
        println!("{name}\t{:.0}", run(cap, producers, messages));
    }
}
