//! What the property tests of the statistics share.

/// Property tests run with a fixed seed and no failure files, so CI is reproducible;
/// `PROPTEST_CASES` widens a run by hand.
pub(crate) fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(cases);
    proptest::test_runner::Config {
        cases,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x7374_6174),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}
