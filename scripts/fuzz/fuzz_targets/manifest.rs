//! Build manifests of another cache (what `merge` reads from a CI artifact): any bytes give a
//! manifest or an error, never a panic, and an accepted manifest names only files inside its
//! entry (no absolute path, no `..`, `.` or empty component), each once, each with a 64-hex
//! hash, so that putting the build together writes nowhere else.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = perfbisect::build::carry::parse_foreign(data, "fuzz.json") {
        let mut paths = Vec::new();
        for f in &m.files {
            assert_eq!(perfbisect::base::paths::outside_reason(&f.path), None, "{:?}", f.path);
            assert!(f.hash.len() == 64 && f.hash.bytes().all(|b| b.is_ascii_hexdigit()));
            paths.push(f.path.as_str());
        }
        paths.sort_unstable();
        for w in paths.windows(2) {
            assert!(w[0] != w[1] && !w[1].starts_with(&format!("{}/", w[0])), "{w:?}");
        }
    }
});
