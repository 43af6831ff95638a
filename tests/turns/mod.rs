//! A two-thread alternation under one Mutex and Condvar: a lock (free, the common
//! case) and a condvar wait (which blocks) in one function, the wake after them.

/// Defines `fn $name(turns: &(Mutex<u64>, Condvar), mine: u64)`, which waits for turn
/// `mine` (0 or 1) and passes it on, with the attributes given (an
/// `#[yieldprof::instrument_wait]`, or none for a partner outside every site).
#[macro_export]
macro_rules! take_turn {
    ($(#[$attr:meta])* fn $name:ident) => {
        $(#[$attr])*
        fn $name(turns: &(std::sync::Mutex<u64>, std::sync::Condvar), mine: u64) {
            let mut turn = turns.0.lock().unwrap();
            while *turn % 2 != mine {
                turn = turns.1.wait(turn).unwrap();
            }
            *turn += 1;
            turns.1.notify_all();
        }
    };
}
