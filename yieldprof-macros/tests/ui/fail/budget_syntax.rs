#[yieldprof::instrument_wait(budget())]
fn empty() {}

#[yieldprof::instrument_wait(budget = 16)]
fn not_a_list() {}

#[yieldprof::instrument_wait(budget(max_yields))]
fn no_value() {}

fn main() {
    empty();
    not_a_list();
    no_value();
}
