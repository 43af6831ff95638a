#[yieldprof::instrument_wait(name =)]
fn wait() {}

#[yieldprof::instrument_wait(crate)]
fn wait_too() {}

fn main() {
    wait();
    wait_too();
}
