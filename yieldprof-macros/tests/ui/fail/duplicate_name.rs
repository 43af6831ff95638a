#[yieldprof::instrument_wait(name = "first", name = "second")]
fn wait() {}

fn main() {
    wait();
}
