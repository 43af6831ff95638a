#[yieldprof::instrument_wait(budget(max_yields = 1, max_yields = 2))]
fn twice_the_key() {}

#[yieldprof::instrument_wait(budget(max_yields = 1), budget(max_spins = 1))]
fn twice_the_budget() {}

fn main() {
    twice_the_key();
    twice_the_budget();
}
