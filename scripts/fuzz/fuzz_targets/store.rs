//! Store decoding: any bytes give samples and warnings or an error, never a panic, and the
//! intact prefix it reports is really intact (decoding just that prefix gives the same samples).
//! The input is also wrapped as the body of one frame with a correct CRC, so that the record
//! decoder behind the checksum (version byte, bincode payload) is fuzzed too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fn check(data: &[u8]) {
    let path = std::path::Path::new("fuzz.pbs");
    if let Ok(loaded) = perfbisect::store::decode_file(path, data) {
        let end = loaded.valid_end as usize;
        assert!(end <= data.len().max(12));
        if loaded.torn_tail {
            // What an appender keeps after cutting a torn tail decodes to the same samples.
            let kept = &data[..end.min(data.len())];
            let again =
                perfbisect::store::decode_file(path, kept).expect("the kept prefix decodes");
            assert_eq!(again.samples, loaded.samples);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if !data.is_empty() {
        let mut framed = b"PBSTORE\0\x01\0\0\0".to_vec();
        framed.extend_from_slice(&(data.len() as u32).to_le_bytes());
        framed.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
        framed.extend_from_slice(data);
        check(&framed);
    }
});
