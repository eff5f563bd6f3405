//! The `detect --input` CSV reader: any bytes give a series or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(series) = perfbisect::stats::read_series_csv(data) {
        assert_eq!(series.index.len(), series.samples.len());
        assert!(series.index.windows(2).all(|w| w[0] < w[1]));
        assert!(series.samples.iter().flatten().all(|v| v.is_finite()));
    }
});
