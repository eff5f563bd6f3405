//! The `import` key of a test: the series of another tool's history it takes, checked alone
//! and against the other tests' (a series is one test's history).

use std::collections::BTreeMap;

use super::model::Test;

/// A test's `import` value (`key` at `at`): one line naming a series.
pub(super) fn key(at: &str, key: &str, value: String) -> anyhow::Result<String> {
    if value.trim().is_empty() || value.contains(['\n', '\r']) {
        crate::usage!(
            "{at}: key `{key}` must name one series of another tool's history (`perfbisect import --from TOOL PATH --list` prints them)"
        );
    }
    Ok(value)
}

/// Two tests taking one foreign series (`import`) are refused, naming both: a series is one
/// test's history.
pub(super) fn apart(
    tests: &BTreeMap<String, Test>,
    lines: &BTreeMap<String, usize>,
    file: &str,
) -> anyhow::Result<()> {
    let mut by_series: BTreeMap<&str, &str> = BTreeMap::new();
    for t in tests.values() {
        let Some(series) = t.import.as_deref() else {
            continue;
        };
        if let Some(first) = by_series.insert(series, &t.name) {
            let line = |n: &str| {
                lines
                    .get(&format!("tests.{n}.import"))
                    .copied()
                    .unwrap_or(0)
            };
            crate::usage!(
                "{file}:{}: key `tests.{}.import`: series `{series}` is taken by test `{first}` too ({file}:{}); a series is one test's history",
                line(&t.name),
                t.name,
                line(first)
            );
        }
    }
    Ok(())
}
