#[yieldprof::instrument_wait(level = "debug")]
fn wait() {}

fn main() {
    wait();
}
