// Every problem is reported at once, each at its own token.
#[yieldprof::instrument_wait(name = "", name = "again")]
const fn wait() {}

fn main() {
    wait();
}
