#[yieldprof::instrument_wait(crate = yieldprof, name = "w", crate = ::yieldprof)]
fn wait() {}

fn main() {
    wait();
}
