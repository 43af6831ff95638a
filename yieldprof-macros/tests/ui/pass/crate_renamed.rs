extern crate yieldprof as yp;

#[yp::instrument_wait(crate = yp)]
fn renamed() {
    std::hint::spin_loop();
}

mod reexport {
    pub use ::yieldprof as runtime;
}

#[yp::instrument_wait(crate = crate::reexport::runtime, name = "through a re-export")]
fn reexported() {
    std::thread::yield_now();
}

fn main() {
    renamed();
    reexported();
    let profile = yp::snapshot();
    assert_eq!(profile.site("renamed").unwrap().calls_of(yp::Kind::Spin), 1);
    let s = profile.site("through a re-export").unwrap();
    assert_eq!(s.calls_of(yp::Kind::Yield), 1);
}
