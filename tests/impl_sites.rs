//! One method name in two impls of one module is two wait sites, each named by its
//! impl, with the episodes each ran (the crossbeam-channel shape: `impl SelectHandle
//! for Receiver` and `for Sender` both have `try_select`). (Own test binary: the
//! frame table is process-wide.)

mod chan {
    pub trait Handle {
        fn try_select(&self) -> bool;
    }
    pub struct Recv;
    pub struct Send;

    impl Handle for Recv {
        #[yieldprof::instrument_wait]
        fn try_select(&self) -> bool {
            std::thread::yield_now();
            true
        }
    }

    impl Handle for Send {
        #[yieldprof::instrument_wait]
        fn try_select(&self) -> bool {
            std::thread::yield_now();
            false
        }
    }

    impl Recv {
        /// A method whose name no other site shares keeps its short name.
        #[yieldprof::instrument_wait]
        pub fn only_here(&self) {
            std::thread::yield_now();
        }
    }
}

use chan::Handle;

#[test]
fn same_method_in_two_impls_is_two_sites() {
    let session = yieldprof::Session::start();
    for _ in 0..3 {
        assert!(chan::Recv.try_select());
    }
    for _ in 0..5 {
        assert!(!chan::Send.try_select());
    }
    chan::Recv.only_here();
    let profile = session.finish();
    let sites = profile.sites();
    let episodes = |name: &str| {
        let s: Vec<_> = sites.iter().filter(|s| s.name == name).collect();
        assert_eq!(
            s.len(),
            1,
            "{name}: {:#?}",
            sites.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        s[0].episodes
    };
    // Ground truth: the loops above ran 3 and 5 calls, one episode each.
    assert_eq!(episodes("chan::<Recv as Handle>::try_select"), 3);
    assert_eq!(episodes("chan::<Send as Handle>::try_select"), 5);
    assert!(sites.iter().all(|s| s.name != "chan::try_select"));
    assert_eq!(episodes("chan::only_here"), 1);
    let recv = profile.site("chan::<Recv as Handle>::try_select").unwrap();
    assert_eq!(
        recv.path,
        "<impl_sites::chan::Recv as impl_sites::chan::Handle>::try_select"
    );
    // The summary and the folded stacks carry the two names apart.
    let summary = profile.summary();
    for name in [
        "<Recv as Handle>::try_select",
        "<Send as Handle>::try_select",
    ] {
        assert!(summary.contains(name), "{name}:\n{summary}");
    }
}
