fn main() {
    let m = std::sync::Mutex::new(1);
    let _g = yieldprof::wait!(mutex, m.lock());
}
