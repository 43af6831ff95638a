#[yieldprof::instrument_wait]
fn spins_then_panics() {
    std::hint::spin_loop();
    panic!("while waiting");
}

#[yieldprof::instrument_wait]
fn survives() {
    let caught = std::panic::catch_unwind(spins_then_panics);
    assert!(caught.is_err());
    // The unwound guard restored this frame as the current one.
    std::hint::spin_loop();
    std::hint::spin_loop();
}

fn main() {
    std::panic::set_hook(Box::new(|_| {}));
    survives();
    let profile = yieldprof::snapshot();
    let inner = profile.site("spins_then_panics").unwrap();
    assert_eq!(
        (inner.episodes, inner.calls_of(yieldprof::Kind::Spin)),
        (1, 1)
    );
    let outer = profile.site("survives").unwrap();
    assert_eq!(
        (outer.episodes, outer.calls_of(yieldprof::Kind::Spin)),
        (1, 2)
    );
}
