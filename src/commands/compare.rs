//! `perfbisect compare TEST REV_A REV_B [--runs N]`: the before/after of a pull request, with
//! both builds run interleaved.

use serde::Serialize;

use crate::cli::{CompareArgs, Format, Global};
use crate::measure;
use crate::pipeline::Workspace;
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
    /// No run gave the metric: `wall`, `user`, `sys` and `max_rss` are those of the failed
    /// runs (the ones that ran: a failed `setup` measures nothing).
    times_of_failed_runs: bool,
    /// Why the first failed run failed (the first line of its record).
    first_failure: Option<String>,
    /// The side got no more runs after its test failed this many runs in a row.
    stopped_after: Option<usize>,
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

fn side(commit: &crate::git::CommitInfo, samples: &[Sample], stopped_after: Option<usize>) -> Side {
    let ok: Vec<&Sample> = samples.iter().filter(|s| s.value.is_some()).collect();
    // Without a single metric, the times and memory of the runs that did run still say
    // something (a crash at once, a hang until the timeout).
    let ran: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.wall > 0.0 || s.max_rss > 0)
        .collect();
    let timed = if ok.is_empty() { &ran } else { &ok };
    let col = |from: &[&Sample], f: fn(&Sample) -> f64| {
        stats::summarize(&from.iter().map(|s| f(s)).collect::<Vec<_>>())
    };
    Side {
        commit: commit.id.to_string(),
        subject: commit.subject.clone(),
        n: ok.len(),
        failed: samples.len() - ok.len(),
        metric: col(&ok, |s| s.value.unwrap_or(f64::NAN)),
        wall: col(timed, |s| s.wall),
        user: col(timed, |s| s.user),
        sys: col(timed, |s| s.sys),
        max_rss: col(timed, |s| s.max_rss as f64),
        times_of_failed_runs: ok.is_empty() && !ran.is_empty(),
        first_failure: samples
            .iter()
            .find_map(|s| s.error.as_deref())
            .map(|e| e.lines().next().unwrap_or("").trim().to_string()),
        stopped_after,
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
    let context = |commit, artifacts| measure::Context {
        test: &test,
        config_dir: &ws.config.dir,
        artifacts,
        commit,
        recipe_hash: ws.config.build.recipe_hash(),
        round: 0,
        fingerprint: ws.fingerprint().id(),
    };
    let (ca, cb) = (context(a.id, &arts[0]), context(b.id, &arts[1]));
    // A side whose test fails `repeats` runs in a row gets no more runs (as `find` steps
    // around such a commit); the first failure of each side is said at once.
    let limit = test.repeats.max(1);
    let mut got: [Vec<Sample>; 2] = Default::default();
    let mut streak = [0usize; 2];
    let mut stopped = [None; 2];
    let names = [("A", &args.rev_a, &a), ("B", &args.rev_b, &b)];
    measure::interleaved_while(
        &ca,
        &cb,
        runs,
        &mut |side, s| {
            let i = usize::from(side);
            let (name, rev, c) = names[i];
            appender.append(&s)?;
            bar.inc(1);
            match &s.error {
                Some(e) => {
                    let first = got[i].iter().all(|x| x.error.is_none());
                    if first || ws.verbosity.verbose > 0 {
                        ws.warn(&failure_message(&test.name, name, rev, c, e));
                    }
                    streak[i] += 1;
                }
                None => streak[i] = 0,
            }
            got[i].push(s);
            if streak[i] >= limit && got[i].len() < runs {
                ws.warn(&format!(
                    "{name} (`{rev}`, {}): the test failed {limit} run{} in a row; no more runs of {name}",
                    c.short(),
                    if limit == 1 { "" } else { "s" }
                ));
                stopped[i] = Some(limit);
                bar.inc((runs - got[i].len()) as u64);
                return Ok(false);
            }
            Ok(true)
        },
        &|w| ws.warn(w),
    )?;
    bar.finish_and_clear();
    if crate::interrupt::requested() {
        return Err(crate::interrupt::Interrupted.into());
    }
    let [sa, sb] = got;
    let va: Vec<f64> = sa.iter().filter_map(|s| s.value).collect();
    let vb: Vec<f64> = sb.iter().filter_map(|s| s.value).collect();
    let diff = stats::differ(&va, &vb, test.alpha, test.threshold);
    let cmp = Comparison {
        test: test.name.clone(),
        unit: test.unit(),
        direction: test.direction.as_str(),
        runs,
        a: side(&a, &sa, stopped[0]),
        b: side(&b, &sb, stopped[1]),
        ratio: diff.map(|d| d.after / d.before).filter(|r| r.is_finite()),
        ratio_ci: stats::bootstrap_median_ratio(&va, &vb, 0.95, 2000, 1),
        p_value: diff.map(|d| d.p_value),
        rel_change: diff.map(|d| d.rel_change),
        deterministic: diff.is_some_and(|d| d.deterministic),
        differs: diff.is_some_and(|d| d.differs),
    };
    match args.format {
        Format::Json => print!("{}", crate::report::json_pretty(&cmp)?),
        _ => print!("{}", text(&cmp, &test)),
    }
    Ok(())
}

/// What a failed run of one side is reported as: the side, its revision and commit, why, and
/// the tail of the run's output, indented.
fn failure_message(
    test: &str,
    name: &str,
    rev: &str,
    c: &crate::git::CommitInfo,
    error: &str,
) -> String {
    let mut lines = error.trim_end().lines();
    let why = lines.next().unwrap_or("failed").trim();
    let tail: Vec<&str> = lines.collect();
    format!(
        "run of `{test}` on {name} (`{rev}`, {}) failed: {why}{}",
        c.short(),
        if tail.is_empty() {
            String::new()
        } else {
            format!(
                "; its output ends with:\n{}",
                crate::pipeline::indent(&tail.join("\n"))
            )
        }
    )
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
        for (name, s) in [("A", &c.a), ("B", &c.b)] {
            let Some(why) = &s.first_failure else {
                continue;
            };
            let mut notes = Vec::new();
            if let Some(k) = s.stopped_after {
                notes.push(format!(
                    "stopped after {k} failed run{} in a row",
                    if k == 1 { "" } else { "s" }
                ));
            }
            if s.times_of_failed_runs {
                notes.push("wall, user, sys and max-rss are of its failed runs".to_string());
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            };
            let _ = writeln!(o, "  {name}: {why}{notes}");
        }
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
            let none: Vec<&str> = [("A", &c.a), ("B", &c.b)]
                .iter()
                .filter(|(_, s)| s.n == 0)
                .map(|(n, _)| *n)
                .collect();
            let _ = writeln!(
                o,
                "no comparison: {}",
                match none.as_slice() {
                    [one] => format!("{one} has no successful run"),
                    [] => "too few successful runs to compare".to_string(),
                    _ => "neither side has a successful run".to_string(),
                }
            );
        }
    }
    o
}
