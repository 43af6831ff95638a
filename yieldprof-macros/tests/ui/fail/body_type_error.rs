// A type error in the body is reported at the user's tokens, not at the attribute.
#[yieldprof::instrument_wait]
fn wait_sync(flag: &std::sync::atomic::AtomicBool) -> u32 {
    let n: u32 = "not a number";
    while !flag.load(std::sync::atomic::Ordering::Acquire) {
        std::thread::yield_now();
    }
    n
}

#[yieldprof::instrument_wait]
async fn wait_async() -> u32 {
    let n: u32 = 1;
    std::thread::sleep(std::time::Duration::from_millis(n as u64));
    "also not a number"
}

fn main() {
    let _ = wait_sync(&std::sync::atomic::AtomicBool::new(true));
    let _ = wait_async();
}
