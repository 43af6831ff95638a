#[yieldprof::instrument_wait(name = 5)]
fn wait() {}

fn main() {
    wait();
}
