#[derive(Debug, PartialEq)]
struct Timeout;

#[yieldprof::instrument_wait]
fn wait_for(ready_after: u32, budget: u32) -> Result<u32, Timeout> {
    for spins in 0..budget {
        if spins == ready_after {
            return Ok(spins);
        }
        std::hint::spin_loop();
    }
    Err(Timeout)
}

#[yieldprof::instrument_wait]
fn parse_then_wait(text: &str) -> Result<u32, std::num::ParseIntError> {
    let n = text.parse::<u32>()?;
    std::thread::yield_now();
    Ok(n)
}

#[yieldprof::instrument_wait]
fn outer() -> u32 {
    let _ = wait_for(2, 10);
    let _ = wait_for(5, 1);
    let _ = parse_then_wait("x");
    // Recorded here only if every inner episode closed on its way out.
    std::hint::spin_loop();
    7
}

fn main() {
    assert_eq!(outer(), 7);
    let profile = yieldprof::snapshot();
    let inner = profile.site("wait_for").unwrap();
    assert_eq!(
        (inner.episodes, inner.calls_of(yieldprof::Kind::Spin)),
        (2, 3)
    );
    let parse = profile.site("parse_then_wait").unwrap();
    assert_eq!(
        (parse.episodes, parse.calls_of(yieldprof::Kind::Yield)),
        (1, 0)
    );
    let outer = profile.site("outer").unwrap();
    assert_eq!(
        (outer.episodes, outer.calls_of(yieldprof::Kind::Spin)),
        (1, 1)
    );
}
