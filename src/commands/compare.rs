//! `perfbisect compare TEST REV_A REV_B [--runs N]`: the before/after of a pull request, with
//! both builds run interleaved.

use serde::Serialize;

use crate::cli::{CompareArgs, Format, Global};
use crate::pipeline::{Batch, Workspace};
use crate::report::find::judge_with_article;
use crate::report::fmt_num;
use crate::stats;
use crate::store::Sample;

use super::{check_format, locations, verbosity};

#[derive(Serialize)]
struct Side {
    commit: String,
    subject: String,
    n: usize,
    failed: usize,
    metric: Option<stats::Summary>,
    wall: Option<stats::Summary>,
    user: Option<stats::Summary>,
    sys: Option<stats::Summary>,
    max_rss: Option<stats::Summary>,
}

#[derive(Serialize)]
struct Comparison {
    test: String,
    unit: String,
    direction: &'static str,
    runs: usize,
    a: Side,
    b: Side,
    /// median(B) / median(A)
    ratio: Option<f64>,
    /// 95 % bootstrap interval of the ratio of medians.
    ratio_ci: Option<(f64, f64)>,
    p_value: Option<f64>,
    /// Relative change of the medians, `(B - A) / |A|`.
    rel_change: Option<f64>,
    /// Both sides have zero spread: compared exactly, `p_value` (0 or 1) is no test's result.
    deterministic: bool,
    /// Mann-Whitney at the test's alpha and the threshold both say the sides differ.
    differs: bool,
}

fn side(commit: &crate::git::CommitInfo, samples: &[Sample]) -> Side {
    let ok: Vec<&Sample> = samples.iter().filter(|s| s.value.is_some()).collect();
    let col =
        |f: fn(&Sample) -> f64| stats::summarize(&ok.iter().map(|s| f(s)).collect::<Vec<_>>());
    Side {
        commit: commit.id.to_string(),
        subject: commit.subject.clone(),
        n: ok.len(),
        failed: samples.len() - ok.len(),
        metric: col(|s| s.value.unwrap_or(f64::NAN)),
        wall: col(|s| s.wall),
        user: col(|s| s.user),
        sys: col(|s| s.sys),
        max_rss: col(|s| s.max_rss as f64),
    }
}

pub fn compare(g: &Global, args: CompareArgs) -> anyhow::Result<()> {
    check_format(args.format, &[Format::Text, Format::Json], "compare")?;
    if args.runs == Some(0) {
        crate::usage!("--runs must be at least 1");
    }
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let test = ws.config.test(&args.test)?.clone();
    let a = ws.repo.info(ws.repo.resolve(&args.rev_a)?)?;
    let b = ws.repo.info(ws.repo.resolve(&args.rev_b)?)?;
    let runs = args.runs.unwrap_or(test.repeats.max(5));
    let mut arts = Vec::new();
    for (rev, c) in [(&args.rev_a, &a), (&args.rev_b, &b)] {
        let (art, _) = ws.ensure_built(&c.id)?;
        match art {
            Some(p) => arts.push(p),
            None => anyhow::bail!(
                "`{rev}` ({}) does not build; see `perfbisect cache ls` and its build log in {}",
                c.short(),
                ws.cache.log(&c.id, ws.config.build.recipe_hash()).display()
            ),
        }
    }
    let mut appender = ws.appender(&test)?;
    let bar = ws.progress.bar(2 * runs as u64, "compare");
    let batch = |id, art| Batch {
        test: &test,
        commit: id,
        artifacts: art,
        runs,
        round: 0,
    };
    let (sa, sb) = ws.measure_interleaved(
        &mut appender,
        batch(a.id, &arts[0]),
        batch(b.id, &arts[1]),
        &mut |_| bar.inc(1),
    )?;
    bar.finish_and_clear();
    if crate::interrupt::requested() {
        return Err(crate::interrupt::Interrupted.into());
    }
    let va: Vec<f64> = sa.iter().filter_map(|s| s.value).collect();
    let vb: Vec<f64> = sb.iter().filter_map(|s| s.value).collect();
    let diff = stats::differ(&va, &vb, test.alpha, test.threshold);
    let cmp = Comparison {
        test: test.name.clone(),
        unit: test.unit.clone(),
        direction: test.direction.as_str(),
        runs,
        a: side(&a, &sa),
        b: side(&b, &sb),
        ratio: diff.map(|d| d.after / d.before).filter(|r| r.is_finite()),
        ratio_ci: stats::bootstrap_median_ratio(&va, &vb, 0.95, 2000, 1),
        p_value: diff.map(|d| d.p_value),
        rel_change: diff.map(|d| d.rel_change),
        deterministic: diff.is_some_and(|d| d.deterministic),
        differs: diff.is_some_and(|d| d.differs),
    };
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&cmp)?),
        _ => print!("{}", text(&cmp, &test)),
    }
    Ok(())
}

fn text(c: &Comparison, test: &crate::config::Test) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: A = {} {}, B = {} {}; {} interleaved runs each",
        c.test,
        &c.a.commit[..10],
        c.a.subject,
        &c.b.commit[..10],
        c.b.subject,
        c.runs
    );
    let _ = writeln!(
        o,
        "{:<8} {:>34} {:>34} {:>9}",
        "", "A median [min .. max]", "B median [min .. max]", "B/A"
    );
    let unit = |u: &str| {
        if u.is_empty() {
            String::new()
        } else {
            format!(" {u}")
        }
    };
    let rows: [(&str, Option<stats::Summary>, Option<stats::Summary>, String); 5] = [
        (&c.test, c.a.metric, c.b.metric, unit(&c.unit)),
        ("wall", c.a.wall, c.b.wall, " s".into()),
        ("user", c.a.user, c.b.user, " s".into()),
        ("sys", c.a.sys, c.b.sys, " s".into()),
        ("max-rss", c.a.max_rss, c.b.max_rss, " B".into()),
    ];
    for (name, a, b, u) in rows {
        let cell = |s: Option<stats::Summary>| match s {
            Some(s) => format!(
                "{}{u} [{} .. {}]",
                fmt_num(s.median),
                fmt_num(s.min),
                fmt_num(s.max)
            ),
            None => "-".into(),
        };
        let ratio = match (a, b) {
            (Some(a), Some(b)) if a.median != 0.0 => {
                format!("{:.1} %", b.median / a.median * 100.0)
            }
            _ => "-".into(),
        };
        let _ = writeln!(
            o,
            "{:<8} {:>34} {:>34} {:>9}",
            name,
            cell(a),
            cell(b),
            ratio
        );
    }
    if c.a.failed + c.b.failed > 0 {
        let _ = writeln!(o, "failed runs: A {}, B {}", c.a.failed, c.b.failed);
    }
    match (c.ratio, c.p_value) {
        (Some(r), Some(p)) => {
            let ci = c
                .ratio_ci
                .map(|(lo, hi)| format!(" (95 % CI {:.1} .. {:.1} %)", lo * 100.0, hi * 100.0))
                .unwrap_or_default();
            let verdict = if c.differs {
                format!(
                    "B differs from A: {} ({} is better)",
                    judge_with_article(test.direction, c.rel_change.unwrap_or(r - 1.0)),
                    c.direction
                )
            } else {
                "no difference that passes the test's threshold and alpha".into()
            };
            let evidence = if c.deterministic {
                "deterministic (no spread on either side)".to_string()
            } else {
                format!("p = {p:.2e}")
            };
            let _ = writeln!(
                o,
                "B is at {:.1} % of A{ci}, {evidence}: {verdict}",
                r * 100.0
            );
        }
        _ => {
            let _ = writeln!(o, "no comparison: one side has no successful run");
        }
    }
    o
}
