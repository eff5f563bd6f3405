//! Measuring across the machines of a CI matrix: which tests' numbers depend on the machine
//! that measures them (so must all be measured on one machine, after `merge` brought the
//! builds there) and which do not (so may be measured on every runner, and their samples count
//! whatever machine took them), and the check `merge` makes that a machine-dependent test's
//! samples come from one machine.

use std::collections::BTreeSet;

use crate::config::{Metric, Test};
use crate::process::counter::{self, Counter};
use crate::store::Sample;

/// Whether a test's numbers depend on the machine that measures it, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dependence {
    /// Another machine measures other numbers: the samples of one machine only compare.
    Machine(String),
    /// The same build measures the same on every machine (of one OS image).
    Independent(String),
}

impl Dependence {
    /// Whether the numbers do not depend on the machine.
    pub fn independent(&self) -> bool {
        matches!(self, Dependence::Independent(_))
    }

    /// Why, in a few words.
    pub fn why(&self) -> &str {
        match self {
            Dependence::Machine(w) | Dependence::Independent(w) => w,
        }
    }
}

/// Whether `test`'s numbers depend on the machine, decided by its metric:
///
/// - times (wall, user, sys) follow the machine's speed;
/// - the peak RSS follows the kernel's accounting and the C library's allocator, which sizes
///   its arenas by the machine's cores;
/// - instructions counted by Valgrind's Cachegrind are those of a simulated CPU, the same on
///   every machine; a hardware counter counts what the libraries chose for this CPU model
///   (glibc picks its string functions by CPU), so its counts are the machine's;
/// - a value read from the output (a regex, a JSON pointer, a harness's field) is the
///   machine's unless the test is declared `deterministic` (a struct size, an allocation
///   count, a file size: zero spread, nothing that follows speed).
pub fn dependence(test: &Test) -> Dependence {
    let machine = |w: &str| Dependence::Machine(w.to_string());
    match &test.metric {
        Metric::Wall => machine("wall time follows the machine's speed"),
        Metric::User | Metric::Sys => machine("CPU time follows the machine's speed"),
        Metric::MaxRss => machine(
            "the peak RSS follows the kernel and the C library's allocator (arenas per core)",
        ),
        Metric::Instructions => match counter::select(test.counter) {
            Ok(sel) if matches!(sel.counter, Counter::Cachegrind { .. }) => Dependence::Independent(
                "instructions counted by Cachegrind, a simulated CPU".to_string(),
            ),
            Ok(_) => machine(
                "instructions counted by the hardware counter include the code libraries chose for this CPU",
            ),
            Err(_) => machine("instructions, and no counter here to say which kind"),
        },
        Metric::Regex(_) | Metric::Json(_) | Metric::Harness(_) if test.deterministic => {
            Dependence::Independent(
                "a deterministic value (a size or a count) read from the output".to_string(),
            )
        }
        Metric::Regex(_) | Metric::Json(_) | Metric::Harness(_) => machine(
            "a value read from the output, not declared deterministic (a harness's times follow the machine)",
        ),
    }
}

/// The fingerprints (other than "not recorded") of the samples of `test` as it is defined now
/// with build recipe `recipe`, leaving out imported rows (their machine is named by the
/// import) and samples of older definitions (not used).
pub fn fingerprints<'a>(
    samples: impl IntoIterator<Item = &'a Sample>,
    test_hash: u64,
    recipe: u64,
) -> BTreeSet<u64> {
    samples
        .into_iter()
        .filter(|s| s.import.is_none() && s.fingerprint != 0)
        .filter(|s| s.test_hash == test_hash && s.recipe_hash == recipe)
        .map(|s| s.fingerprint)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(fingerprint: u64, test_hash: u64) -> Sample {
        Sample {
            commit: [1; 20],
            test_hash,
            recipe_hash: 7,
            time: 0,
            round: 0,
            wall: 0.0,
            user: 0.0,
            sys: 0.0,
            max_rss: 0,
            value: Some(1.0),
            error: None,
            fingerprint,
            import: None,
            window: 0,
            moment: 0,
        }
    }

    #[test]
    fn times_and_memory_are_the_machines_sizes_and_cachegrind_counts_are_not() {
        let text = r#"
[measure]
counter = "cachegrind"
[build]
command = "true"
artifacts = ["app"]
[tests.wall]
command = "./app"
metric = "wall"
[tests.rss]
command = "./app"
metric = "max-rss"
[tests.score]
command = "./app"
metric = { regex = "^score: ([0-9.]+)" }
[tests.size]
command = "./app"
metric = { regex = "^size: ([0-9]+)" }
deterministic = true
[tests.ir]
command = "./app"
metric = "instructions"
"#;
        let config = crate::config::parse(text, std::path::Path::new("perfbisect.toml")).unwrap();
        let of = |name: &str| dependence(&config.tests[name]);
        for name in ["wall", "rss", "score"] {
            assert!(!of(name).independent(), "{name}: {:?}", of(name));
        }
        assert!(of("size").independent(), "{:?}", of("size"));
        // Cachegrind where Valgrind is installed; without it there is no count to trust.
        let cachegrind = crate::process::counter::select(config.tests["ir"].counter).is_ok();
        assert_eq!(of("ir").independent(), cachegrind, "{:?}", of("ir"));
    }

    #[test]
    fn fingerprints_leave_out_unrecorded_imported_and_stale_samples() {
        let mut imported = sample(9, 3);
        imported.import = Some(Default::default());
        let all = [
            sample(1, 3),
            sample(2, 3),
            sample(1, 3),
            sample(0, 3),
            sample(5, 4),
            imported,
        ];
        assert_eq!(
            fingerprints(&all, 3, 7).into_iter().collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert!(fingerprints(&all, 3, 8).is_empty());
    }
}
