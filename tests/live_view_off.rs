//! The live view is opt-in and loopback-only: without `YIELDPROF_HTTP` (or
//! `Options::http`) there is no socket and no thread, and a non-loopback address needs
//! `YIELDPROF_HTTP_ANY=1`. One test: it sets environment variables and counts the
//! process's threads.

/// Names of this process's threads.
fn threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|c| c.trim_end().to_string())
        .collect()
}

#[test]
fn no_live_view_thread_unless_asked_and_only_on_loopback() {
    let dir = std::env::temp_dir().join(format!("yieldprof-live-off-{}", std::process::id()));
    std::env::remove_var("YIELDPROF_HTTP");
    std::env::remove_var("YIELDPROF_HTTP_ANY");
    let opts = yieldprof::Options::from_env().out_dir(&dir).name("off");
    assert_eq!((opts.http, opts.http_any), (None, false));
    let before = threads().len();
    let off = opts.clone().init();
    assert_eq!(off.http_addr(), None);
    assert_eq!(threads().len(), before, "{:?}", threads());

    let anywhere = opts.clone().http("0.0.0.0:0".parse().unwrap()).init();
    assert_eq!(anywhere.http_addr(), None, "not loopback, no override");
    assert_eq!(threads().len(), before, "{:?}", threads());

    std::env::set_var("YIELDPROF_HTTP", "127.0.0.1:0");
    std::env::set_var("YIELDPROF_HTTP_ANY", "1");
    let from_env = yieldprof::Options::from_env();
    assert_eq!(from_env.http, Some("127.0.0.1:0".parse().unwrap()));
    assert!(from_env.http_any);
    std::env::set_var("YIELDPROF_HTTP", "port 80 please");
    assert_eq!(
        yieldprof::Options::from_env().http,
        None,
        "a bad value is no address"
    );
    std::env::remove_var("YIELDPROF_HTTP");
    std::env::remove_var("YIELDPROF_HTTP_ANY");
    drop((off, anywhere));
    std::fs::remove_dir_all(&dir).unwrap();
}
