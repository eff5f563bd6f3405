//! Generated configs, any TOML value in every key: the loader and the first steps of `run`
//! answer with a result or a clear error (exit 2 naming the key), never a panic.

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};

/// Any TOML value a user might type, with the absurd ones that broke things before.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "5",
            "100000",
            "100001",
            "9223372036854775807",
            "-9223372036854775808",
        ])
        .prop_map(String::from),
        any::<f64>().prop_map(|f| format!("{f:?}")),
        prop::sample::select(vec![
            "1e300", "-1e300", "nan", "inf", "-inf", "0.0", "1e-300", "0.5", "2.5e9",
        ])
        .prop_map(String::from),
        any::<bool>().prop_map(|b| b.to_string()),
        prop::sample::select(vec![
            "\"\"",
            "\"2%\"",
            "\"-2%\"",
            "\"inf%\"",
            "\"nan%\"",
            "\"1e300%\"",
            "\"90s\"",
            "\"1e300s\"",
            "\"99999999999999999999y\"",
            "\"18446744073709551615s\"",
            "\"lower\"",
            "\"higher\"",
            "\"wall\"",
            "\"max-rss\"",
            "\"cycles\"",
            "\"/x\"",
            "\"../x\"",
            "\"a b\"",
            "\"1979-05-27T07:32:00Z\"",
        ])
        .prop_map(String::from),
        prop::sample::select(vec![
            "1979-05-27T07:32:00Z",
            "07:32:00",
            "{ regex = \"([0-9]+)\" }",
            "{ regex = \"[\" }",
            "{ regex = \"x\" }",
            "{ json = \"/a\" }",
            "{ json = \"a\" }",
            "{ json = 3 }",
            "{ a = 1, b = 2 }",
            "{}",
        ])
        .prop_map(String::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop::collection::vec(inner, 0..3).prop_map(|v| format!("[{}]", v.join(", ")))
    })
}

/// Commands stay harmless: the generated config is really run.
fn command() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => prop::sample::select(vec![
            "\"true\"", "\"echo 1\"", "\"exit 3\"", "\"echo value: 7\"", "\"touch x; echo 5\"",
        ])
        .prop_map(String::from),
        1 => value().prop_filter("not a string", |v| !v.starts_with('"')),
    ]
}

/// Values of the right type for each key: those inside its range (edges included), and
/// those just outside it.
fn typed(key: &str) -> (Vec<&'static str>, Vec<&'static str>) {
    match key {
        "artifacts" => (
            vec!["[\"x\"]", "[\"x\", \"x\"]", "[\"missing\"]", "[\"./x\"]"],
            vec!["[]", "[\"/etc\"]", "[\"..\"]", "[\"\"]"],
        ),
        "timeout" => (
            vec![
                "\"1ns\"",
                "\"90s\"",
                "\"30days\"",
                "2592000",
                "1e-9",
                "0.001",
                "1",
            ],
            vec!["\"31days\"", "2592001", "\"0s\"", "0", "1e300", "-1"],
        ),
        "env" => (
            vec!["{}", "{ A = \"1\" }", "{ PATH = \"\" }"],
            vec!["{ A = 1 }"],
        ),
        "metric" => (
            vec![
                "\"wall\"",
                "\"user\"",
                "\"sys\"",
                "\"max-rss\"",
                "{ regex = \"([0-9]+)\" }",
                "{ regex = \"value: (.*)\" }",
                "{ json = \"\" }",
                "{ json = \"/a/0\" }",
            ],
            vec!["\"cycles\"", "{ regex = \"x\" }", "{ json = \"a\" }"],
        ),
        "unit" => (vec!["\"\"", "\"bytes\"", "\"µs\""], vec!["1"]),
        "direction" => (vec!["\"lower\"", "\"higher\""], vec!["\"up\""]),
        "repeats" | "max_repeats" => (vec!["1", "2", "5", "30"], vec!["0", "-1", "100001"]),
        "warmup" => (vec!["0", "1", "3"], vec!["-1"]),
        "deterministic" => (vec!["true", "false"], vec!["1"]),
        "threshold" => (
            vec![
                "\"0%\"",
                "\"1%\"",
                "\"1e300%\"",
                "\"100000%\"",
                "0",
                "1e300",
                "1e-300",
                "5",
            ],
            vec!["\"-1%\"", "\"inf%\"", "-1", "inf", "nan"],
        ),
        "alpha" => (
            vec!["0.01", "1e-300", "0.4999999"],
            vec!["0.5", "0.0", "nan"],
        ),
        "stake" => (
            vec!["0", "-1", "1e300", "-1e300", "1e-300", "3064"],
            vec!["inf", "nan"],
        ),
        "description" => (vec!["\"d\"", "\"\""], vec!["1"]),
        _ => (vec!["1"], vec!["\"x\""]),
    }
}

/// Mostly a value of the key's own type (so that `run` really starts), now and then one
/// just out of range, or anything at all.
fn key_value(key: &'static str) -> impl Strategy<Value = Option<String>> {
    let (ok, bad) = typed(key);
    prop::option::weighted(
        0.6,
        prop_oneof![
            60 => prop::sample::select(ok).prop_map(String::from),
            2 => prop::sample::select(bad).prop_map(String::from),
            1 => value(),
        ],
    )
}

const BUILD_KEYS: &[&str] = &["artifacts", "timeout", "env"];
const TEST_KEYS: &[&str] = &[
    "metric",
    "unit",
    "direction",
    "repeats",
    "deterministic",
    "warmup",
    "max_repeats",
    "threshold",
    "alpha",
    "stake",
    "description",
    "timeout",
];

fn keys(names: &'static [&'static str]) -> BoxedStrategy<Vec<Option<String>>> {
    let mut all: BoxedStrategy<Vec<Option<String>>> = Just(Vec::new()).boxed();
    for &k in names {
        all = (all, key_value(k))
            .prop_map(|(mut v, x)| {
                v.push(x);
                v
            })
            .boxed();
    }
    all
}

fn config() -> impl Strategy<Value = String> {
    (command(), keys(BUILD_KEYS), command(), keys(TEST_KEYS)).prop_map(
        |(build_cmd, build, test_cmd, test)| {
            let mut s = format!("[build]\ncommand = {build_cmd}\n");
            for (k, v) in BUILD_KEYS.iter().zip(build) {
                if let Some(v) = v {
                    s += &format!("{k} = {v}\n");
                }
            }
            s += &format!("\n[tests.t]\ncommand = {test_cmd}\n");
            for (k, v) in TEST_KEYS.iter().zip(test) {
                if let Some(v) = v {
                    s += &format!("{k} = {v}\n");
                }
            }
            s
        },
    )
}

fn fixed(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(0xC0F1),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(fixed(400))]

    #[test]
    fn loader_never_panics(text in config()) {
        let r = std::panic::catch_unwind(|| {
            perfbisect::config::parse(&text, std::path::Path::new("/x/perfbisect.toml"))
        });
        prop_assert!(r.is_ok(), "the loader panicked on:\n{text}");
        if let Ok(Err(e)) = r {
            prop_assert!(perfbisect::error::is_usage(&e), "not a usage error: {e:#}\n{text}");
        }
    }
}

/// The real binary on a one-commit repository: `run` with each generated config exits 0, 1
/// or 2 and never panics. Runs that a huge `repeats` would make long are cut off by the
/// test's own limit: what matters is that nothing panicked up to there.
#[test]
fn run_never_panics_on_generated_configs() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| perfbisect::scaffold::demo::git(&repo, args, None).unwrap();
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("x"), "1\n").unwrap();
    git(&["add", "x"]);
    git(&["commit", "-qm", "one"]);

    let mut runner = proptest::test_runner::TestRunner::new(fixed(60));
    let cfg_path = dir.path().join("perfbisect.toml");
    runner
        .run(&config(), |text| {
            std::fs::write(&cfg_path, &text).unwrap();
            let cache = tempfile::tempdir_in(dir.path()).unwrap();
            let out = assert_cmd::Command::cargo_bin("perfbisect")
                .unwrap()
                .arg("--repo")
                .arg(&repo)
                .arg("--config")
                .arg(&cfg_path)
                .arg("--cache")
                .arg(cache.path())
                .args(["--no-progress", "run", "all", "HEAD"])
                .timeout(std::time::Duration::from_secs(20))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            if std::env::var_os("CONFIG_PROPS_DEBUG").is_some() {
                eprintln!(
                    "{:?} {}",
                    out.status.code(),
                    err.lines().next().unwrap_or("")
                );
            }
            prop_assert!(!err.contains("panicked"), "panic on:\n{text}\n{err}");
            // None: cut off by the limit above, still running without a panic.
            if let Some(code) = out.status.code() {
                prop_assert!([0, 1, 2].contains(&code), "exit {code} on:\n{text}\n{err}");
                if code == 2 {
                    prop_assert!(
                        err.contains("perfbisect.toml:") || err.contains("key"),
                        "a config error names the file and line:\n{text}\n{err}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
}
