#[yieldprof::instrument_wait(crate = "yieldprof")]
fn wait() {}

fn main() {
    wait();
}
