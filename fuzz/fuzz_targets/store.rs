//! Store decoding: any bytes give samples and warnings or an error, never a panic, and the
//! intact prefix it reports is really intact (decoding just that prefix gives the same samples).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.pbs");
    if let Ok(loaded) = perfbisect::store::decode_file(path, data) {
        let end = loaded.valid_end as usize;
        assert!(end <= data.len().max(12));
        if !loaded.torn_tail {
            return;
        }
        // What an appender keeps after cutting a torn tail decodes to the same samples.
        let kept = &data[..end.min(data.len())];
        let again = perfbisect::store::decode_file(path, kept).expect("the kept prefix decodes");
        assert_eq!(again.samples, loaded.samples);
        assert!(!again.torn_tail || kept.len() < 12);
    }
});
