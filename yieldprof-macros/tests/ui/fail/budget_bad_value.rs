// Every bad value is reported at once, each at its own token.
#[yieldprof::instrument_wait(budget(
    max_episodes = -1,
    max_yields = "16",
    max_spins = 1.5,
    yields_per_episode = many,
    max_wall_share = 1.5,
    max_sleeps = 99999999999999999999999,
))]
fn wait() {}

fn main() {
    wait();
}
