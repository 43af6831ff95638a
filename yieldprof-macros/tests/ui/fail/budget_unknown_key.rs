// A misspelt limit is an error at its key, not a limit silently dropped.
#[yieldprof::instrument_wait(budget(yield_per_episode = 16))]
fn wait() {}

fn main() {
    wait();
}
