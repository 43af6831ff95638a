#[yieldprof::instrument_wait(name = "")]
fn wait() {}

fn main() {
    wait();
}
