//! `compare`'s before/after of two revisions: both built, their runs interleaved in one window
//! (doubled while the sides are not told apart, unless the runs are given), a side whose test
//! keeps failing stepped around, the verdict by the test's alpha and threshold, and the
//! profile of what changed when they differ.

use crate::measure;
use crate::pipeline::workspace::Workspace;
use crate::report::compare::{Comparison, Side};
use crate::stats;
use crate::store::Sample;

/// What `compare` was asked for.
pub struct Request<'a> {
    pub rev_a: &'a str,
    pub rev_b: &'a str,
    /// Runs per side; `None`: the test's repeats (at least 5), doubled while needed.
    pub runs: Option<usize>,
    /// `--why` and `--no-why`.
    pub why: bool,
    pub no_why: bool,
}

/// Robust noise of the two sides (the mean of their robust CVs).
fn noise_of(a: &[f64], b: &[f64]) -> f64 {
    let cvs: Vec<f64> = [a, b]
        .iter()
        .filter_map(|x| stats::robust_cv(x))
        .filter(|c| c.is_finite())
        .collect();
    if cvs.is_empty() {
        0.0
    } else {
        cvs.iter().sum::<f64>() / cvs.len() as f64
    }
}

/// The test's threshold as a relative change from `level`.
fn relative_threshold(test: &crate::config::Test, level: f64) -> f64 {
    match test.threshold {
        stats::Threshold::Relative(r) => r.abs(),
        stats::Threshold::Absolute(a) if level != 0.0 => a.abs() / level.abs(),
        stats::Threshold::Absolute(_) => 0.0,
    }
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
        // 0 is "not measured" (a run not made through the launcher), never a peak of 0 bytes.
        max_rss: stats::summarize(
            &timed
                .iter()
                .filter(|s| s.max_rss > 0)
                .map(|s| s.max_rss as f64)
                .collect::<Vec<_>>(),
        ),
        times_of_failed_runs: ok.is_empty() && !ran.is_empty(),
        first_failure: samples
            .iter()
            .find_map(|s| s.error.as_deref())
            .map(|e| e.lines().next().unwrap_or("").trim().to_string()),
        stopped_after,
    }
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
                crate::base::paths::indent(&tail.join("\n"))
            )
        }
    )
}

/// Build both revisions of `req` and compare `test` on them; the comparison, and the profile of
/// what changed when the sides differ and profiling is on (or was asked for).
pub fn compare(
    ws: &Workspace,
    test: &crate::config::Test,
    req: &Request<'_>,
) -> anyhow::Result<(
    Comparison,
    Option<Result<crate::pipeline::profile::Why, String>>,
)> {
    ws.counter_note(test)?;
    let a = ws.repo.info(ws.repo.resolve(req.rev_a)?)?;
    let b = ws.repo.info(ws.repo.resolve(req.rev_b)?)?;
    let runs = req.runs.unwrap_or(test.repeats.max(5));
    let arts = build_sides(ws, req, &a, &b)?;
    let m = measure_sides(ws, test, req, &a, &b, &arts, runs)?;
    if crate::base::interrupt::requested() {
        return Err(crate::base::interrupt::Interrupted.into());
    }
    let cmp = comparison(test, &a, &b, m);
    let valgrind =
        crate::process::counter::select(crate::config::harness::Choice::Cachegrind).is_ok();
    let profile = cmp.differs
        && !req.no_why
        && (req.why || (valgrind && crate::pipeline::profile::worth_profiling(test)));
    let why = if profile {
        Some(crate::pipeline::profile::why(ws, test, a.id, b.id)?)
    } else {
        None
    };
    let cmp = Comparison {
        why: why.as_ref().map(crate::report::why::json),
        ..cmp
    };
    Ok((cmp, why))
}

/// The artifacts of `a` and `b` (`req`'s two revisions), built if they are not; a side that
/// does not build ends the comparison, with how its build ended.
fn build_sides(
    ws: &Workspace,
    req: &Request<'_>,
    a: &crate::git::CommitInfo,
    b: &crate::git::CommitInfo,
) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut arts = Vec::new();
    for (rev, c) in [(req.rev_a, a), (req.rev_b, b)] {
        let (art, _) = ws.ensure_built(&c.id)?;
        match art {
            Some(p) => arts.push(p),
            None => anyhow::bail!(
                "`{rev}` ({} {}) could not be built, so there is nothing to compare; its build \
                 ended with:\n{}",
                c.short(),
                c.subject,
                ws.build_failure(&c.id)
            ),
        }
    }
    Ok(arts)
}

/// The runs of both sides, A's first.
struct Measured {
    got: [Vec<Sample>; 2],
    /// After how many failed runs in a row a side got no more.
    stopped: [Option<usize>; 2],
    /// Runs asked of each side, in the end.
    asked: usize,
    /// Without `--runs`: doubled while the sides were not told apart.
    adaptive: bool,
    /// Without `--runs`: the most runs a side could get (the budget, as far as it was asked).
    budget: Option<usize>,
}

/// Measure `test` on `a` and `b` (built at `arts`) side by side in one window, `runs` each
/// and, without `--runs`, more while they cannot be told apart; every run stored. Ctrl-C ends
/// it early (the caller says so).
fn measure_sides(
    ws: &Workspace,
    test: &crate::config::Test,
    req: &Request<'_>,
    a: &crate::git::CommitInfo,
    b: &crate::git::CommitInfo,
    arts: &[std::path::PathBuf],
    runs: usize,
) -> anyhow::Result<Measured> {
    let mut appender = ws.appender(test)?;
    let bar = ws.progress.bar(2 * runs as u64, "compare");
    let window = crate::store::new_window();
    let context = |commit, artifacts| measure::Context {
        test,
        config_dir: &ws.config.dir,
        artifacts,
        commit,
        recipe_hash: ws.config.build.recipe_hash(),
        round: 0,
        fingerprint: ws.test_fingerprint(test).id(),
        window,
    };
    let (ca, cb) = (context(a.id, &arts[0]), context(b.id, &arts[1]));
    // A side whose test fails `repeats` runs in a row gets no more runs (as `find` steps
    // around such a commit); the first failure of each side is said at once.
    let limit = test.repeats.max(1);
    let mut got: [Vec<Sample>; 2] = Default::default();
    let mut streak = [0usize; 2];
    let mut stopped = [None; 2];
    let names = [("A", req.rev_a, a), ("B", req.rev_b, b)];
    // Without --runs: double the runs (one window, interleaved) while the sides are not told
    // apart and these runs could not have seen a change of the threshold, up to max_repeats.
    let adaptive = req.runs.is_none();
    let most = if adaptive {
        test.max_repeats.max(runs)
    } else {
        runs
    };
    let mut asked = runs;
    let mut moment = 0u32;
    let mut done_runs = 0usize;
    // Off a terminal, a line for the phase and a heartbeat while it lasts (as `find` has).
    if !ws.progress.visible() {
        ws.note(&format!(
            "perfbisect: measuring {} on A ({}) and B ({}) side by side, {runs} runs each{}",
            test.name,
            a.short(),
            b.short(),
            if adaptive {
                " (more while they cannot be told apart)"
            } else {
                ""
            }
        ));
    }
    let doing = |n: usize, of: usize| format!("measuring A and B (run {n} of {of})");
    let beat = ws.progress.heartbeat(doing(1, 2 * runs));
    let mut measured = 0usize;
    let mut budget = most;
    loop {
        let more = asked - done_runs;
        let units = [
            measure::Unit::one(&ca, if stopped[0].is_some() { 0 } else { more }),
            measure::Unit::one(&cb, if stopped[1].is_some() { 0 } else { more }),
        ];
        let r = measure::rounds(
            &units,
            window ^ u64::from(moment),
            moment,
            &mut |u, _, s| {
                let (name, rev, c) = names[u];
                appender.append(&s)?;
                crate::base::interrupt::kept_run();
                bar.inc(1);
                measured += 1;
                beat.set(doing(measured + 1, 2 * asked));
                match &s.error {
                    Some(e) => {
                        let first = got[u].iter().all(|x| x.error.is_none());
                        if first || ws.verbosity.verbose > 0 {
                            ws.warn(&failure_message(&test.name, name, rev, c, e));
                        }
                        streak[u] += 1;
                    }
                    None => streak[u] = 0,
                }
                got[u].push(s);
                if streak[u] >= limit && got[u].len() < asked {
                    ws.warn(&format!(
                        "{name} (`{rev}`, {}): the test failed {limit} run{} in a row; no more runs of {name}",
                        c.short(),
                        if limit == 1 { "" } else { "s" }
                    ));
                    stopped[u] = Some(limit);
                    bar.inc((asked - got[u].len()) as u64);
                    return Ok(false);
                }
                Ok(true)
            },
            &|w| ws.warn(w),
        )?;
        moment += r.rounds as u32;
        done_runs = asked;
        if crate::base::interrupt::requested() || !adaptive {
            break;
        }
        if asked >= most {
            // `max_repeats` spent and the sides still straddle the threshold: on up to the
            // budget (the runs that take one build's time, or --max-runs).
            budget = budget_of(ws, test, b, &[&got[0], &got[1]], most);
            if asked >= budget || !straddles(test, &got, &stopped) {
                break;
            }
            asked = (2 * asked).min(budget);
        } else {
            if !worth_more(test, &got, &stopped) {
                break;
            }
            asked = (2 * asked).min(most);
        }
        bar.inc_length(2 * (asked - done_runs) as u64);
    }
    drop(beat);
    bar.finish_and_clear();
    Ok(Measured {
        got,
        stopped,
        asked,
        adaptive,
        budget: adaptive.then_some(budget),
    })
}

/// Whether more runs may tell the sides apart: they do not differ yet, neither side was
/// stopped, and the difference looks promising or the runs so far could not have seen a
/// change of the threshold.
fn worth_more(
    test: &crate::config::Test,
    got: &[Vec<Sample>; 2],
    stopped: &[Option<usize>; 2],
) -> bool {
    let va: Vec<f64> = got[0].iter().filter_map(|s| s.value).collect();
    let vb: Vec<f64> = got[1].iter().filter_map(|s| s.value).collect();
    let Some(d) = stats::differ_declared(&va, &vb, test.alpha, test.threshold, test.deterministic)
    else {
        return false;
    };
    if d.differs || d.deterministic || stopped.iter().any(Option::is_some) {
        return false;
    }
    let cv = noise_of(&va, &vb);
    let mdc = stats::min_detectable_change(cv, va.len(), vb.len(), test.alpha);
    let promising = d.p_value < 0.25 || test.threshold.reached(d.before, d.after);
    if !promising && mdc <= relative_threshold(test, d.before) {
        return false;
    }
    true
}

/// The most runs a side may get while the sides straddle the threshold: `max_runs` (the
/// test's, or `--max-runs`), else the runs whose own wall time adds up to one build of B
/// (from its manifest) at the pace of the runs `got` so far, twice `most` at least
/// ([`crate::bisect::budget_of`]).
pub(crate) fn budget_of(
    ws: &Workspace,
    test: &crate::config::Test,
    b: &crate::git::CommitInfo,
    got: &[&[Sample]],
    most: usize,
) -> usize {
    let walls: Vec<f64> = got
        .iter()
        .flat_map(|side| side.iter())
        .map(|s| s.wall)
        .filter(|w| *w > 0.0 && w.is_finite())
        .collect();
    let runs = walls.len();
    let took = walls.iter().sum::<f64>();
    if let Some(n) = test.max_runs {
        return n.max(most);
    }
    if test.deterministic {
        return most;
    }
    let recipe = ws.config.build.recipe_hash();
    let build = crate::build::cas::read_manifest(&ws.cache, &b.id, recipe).and_then(|m| m.build_ms);
    let timed = build.filter(|_| runs > 0).map(|ms| {
        let per_run = took / runs as f64;
        let n = (ms as f64 / 1000.0 / per_run.max(1e-9)).floor();
        n.min(crate::bisect::MAX_BUDGET as f64) as usize
    });
    crate::bisect::budget_of(most, timed)
}

/// Whether the sides, not told apart, still straddle the threshold: the runs could not have
/// seen a change of it, or the 95 % interval of B/A reaches past it.
fn straddles(
    test: &crate::config::Test,
    got: &[Vec<Sample>; 2],
    stopped: &[Option<usize>; 2],
) -> bool {
    let va: Vec<f64> = got[0].iter().filter_map(|s| s.value).collect();
    let vb: Vec<f64> = got[1].iter().filter_map(|s| s.value).collect();
    let Some(d) = stats::differ_declared(&va, &vb, test.alpha, test.threshold, test.deterministic)
    else {
        return false;
    };
    if d.differs || d.deterministic || stopped.iter().any(Option::is_some) {
        return false;
    }
    let thr = relative_threshold(test, d.before);
    let mdc = stats::min_detectable_change(noise_of(&va, &vb), va.len(), vb.len(), test.alpha);
    let reaches = stats::bootstrap_median_ratio(&va, &vb, 0.95, 2000, 1)
        .is_none_or(|(lo, hi)| lo - 1.0 <= -thr || hi - 1.0 >= thr);
    mdc > thr || reaches
}

/// The verdict on the runs `m` of `a` and `b`, by the test's alpha and threshold (without the
/// profile).
fn comparison(
    test: &crate::config::Test,
    a: &crate::git::CommitInfo,
    b: &crate::git::CommitInfo,
    m: Measured,
) -> Comparison {
    let Measured {
        got,
        stopped,
        asked,
        adaptive,
        budget,
    } = m;
    let [sa, sb] = got;
    let va: Vec<f64> = sa.iter().filter_map(|s| s.value).collect();
    let vb: Vec<f64> = sb.iter().filter_map(|s| s.value).collect();
    let diff = stats::differ_declared(&va, &vb, test.alpha, test.threshold, test.deterministic)
        .map(|d| as_find_does(test, &sa, &sb, d));
    let min_detectable = if diff.is_some_and(|d| d.deterministic) {
        Some(0.0)
    } else {
        let m = stats::min_detectable_change(noise_of(&va, &vb), va.len(), vb.len(), test.alpha);
        m.is_finite().then_some(m)
    };
    let threshold = diff.map(|d| relative_threshold(test, d.before));
    Comparison {
        test: test.name.clone(),
        unit: test.unit(),
        direction: test.direction.as_str(),
        runs: asked,
        a: side(a, &sa, stopped[0]),
        b: side(b, &sb, stopped[1]),
        ratio: diff.map(|d| d.after / d.before).filter(|r| r.is_finite()),
        ratio_ci: stats::bootstrap_median_ratio(&va, &vb, 0.95, 2000, 1),
        p_value: diff.map(|d| d.p_value),
        rel_change: diff.map(|d| d.rel_change),
        deterministic: diff.is_some_and(|d| d.deterministic),
        differs: diff.is_some_and(|d| d.differs),
        min_detectable,
        could_see_threshold: match (min_detectable, threshold) {
            (Some(m), Some(t)) => Some(m <= t),
            _ => None,
        },
        adaptive,
        budget,
        deciding_runs: (!diff.is_some_and(|d| d.differs || d.deterministic))
            .then(|| {
                let cv = noise_of(&va, &vb);
                threshold.map(|t| stats::repeats_needed(cv, t, test.alpha, 0.8))
            })
            .flatten()
            .filter(|&n| n != usize::MAX && n > asked),
        why: None,
    }
}

/// `d`, restated as exact values where `find`'s rule for a culprit and its parent
/// ([`crate::bisect::Search::pair`]) compares these runs exactly (a count whose runs spread
/// far less than the threshold, or runs without spread): one classification of exact values
/// in `compare`, `find`, `detect` and the report.
fn as_find_does(
    test: &crate::config::Test,
    a: &[Sample],
    b: &[Sample],
    d: stats::Difference,
) -> stats::Difference {
    let stored = |s: &[Sample]| -> Vec<crate::bisect::Stored> {
        s.iter()
            .filter_map(|x| crate::pipeline::rows::stored_run(x, false))
            .collect()
    };
    let params = crate::pipeline::history::pair_params(test);
    match crate::bisect::Search::pair(params, &stored(a), &stored(b)) {
        Some((c, true)) => {
            let significant = c.p_value < test.alpha;
            stats::Difference {
                before: c.before,
                after: c.after,
                rel_change: c.rel_change,
                p_value: c.p_value,
                deterministic: true,
                significant,
                differs: significant && test.threshold.reached(c.before, c.after),
            }
        }
        _ => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(values: &[f64]) -> Vec<Sample> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| Sample {
                commit: [1; 20],
                test_hash: 1,
                recipe_hash: 2,
                time: i as u64,
                round: 0,
                wall: 0.0,
                user: 0.0,
                sys: 0.0,
                max_rss: 0,
                value: Some(v),
                error: None,
                fingerprint: 0,
                import: None,
                window: 7,
                moment: i as u32,
            })
            .collect()
    }

    /// Issue 58: past `max_repeats`, `compare` goes on only while the sides straddle the
    /// threshold: not told apart, and their interval (or the runs' reach) not yet within it.
    #[test]
    fn more_runs_only_while_the_sides_straddle_the_threshold() {
        let cfg = crate::config::parse(
            "[build]\ncommand = \"true\"\n[tests.t]\ncommand = \"./app\"\nthreshold = \"1%\"\n",
            std::path::Path::new("/tmp/perfbisect.toml"),
        )
        .unwrap();
        let test = cfg.test("t").unwrap();
        let wave = |n: usize, level: f64, cv: f64| -> Vec<f64> {
            (0..n)
                .map(|i| level * (1.0 + cv * (((i * 7919) % 101) as f64 / 50.0 - 1.0)))
                .collect()
        };
        let none = [None, None];
        // Ten runs a side of 1.5 % noise, 0.5 % apart: in doubt.
        let got = [
            runs(&wave(10, 1000.0, 0.015)),
            runs(&wave(10, 1005.0, 0.015)),
        ];
        assert!(straddles(test, &got, &none));
        // Four hundred runs a side of 0.2 % noise at one level: no change, shown.
        let got = [
            runs(&wave(400, 1000.0, 0.002)),
            runs(&wave(400, 1000.0, 0.002)),
        ];
        assert!(!straddles(test, &got, &none));
        // Told apart: nothing more to ask.
        let got = [
            runs(&wave(10, 1000.0, 0.002)),
            runs(&wave(10, 1100.0, 0.002)),
        ];
        assert!(!straddles(test, &got, &none));
        // A side that stopped (its test kept failing) gets no more.
        let got = [
            runs(&wave(10, 1000.0, 0.015)),
            runs(&wave(10, 1005.0, 0.015)),
        ];
        assert!(!straddles(test, &got, &[Some(3), None]));
    }

    #[test]
    fn counts_a_few_instructions_apart_compare_exactly_as_find_compares_them() {
        let cfg = crate::config::parse(
            "[build]\ncommand = \"true\"\n[tests.instr]\ncommand = \"./app\"\nmetric = \"instructions\"\nthreshold = \"1%\"\n",
            std::path::Path::new("/tmp/perfbisect.toml"),
        )
        .unwrap();
        let test = cfg.test("instr").unwrap();
        // Counter jitter of a few tens in 90 M, a step of 1 M: exact in `find`.
        let (a, b) = (
            runs(&[90_027_411.0, 90_027_430.0, 90_027_401.0]),
            runs(&[89_027_020.0, 89_027_044.0, 89_027_031.0]),
        );
        let va: Vec<f64> = a.iter().filter_map(|s| s.value).collect();
        let vb: Vec<f64> = b.iter().filter_map(|s| s.value).collect();
        let plain = stats::differ_declared(&va, &vb, test.alpha, test.threshold, false).unwrap();
        assert!(!plain.deterministic, "a rank test on its own: {plain:?}");
        let d = as_find_does(test, &a, &b, plain);
        assert!(d.deterministic && d.differs, "{d:?}");
        let params = crate::pipeline::history::pair_params(test);
        let stored = |s: &[Sample]| -> Vec<crate::bisect::Stored> {
            s.iter()
                .filter_map(|x| crate::pipeline::rows::stored_run(x, false))
                .collect()
        };
        let (c, det) = crate::bisect::Search::pair(params, &stored(&a), &stored(&b)).unwrap();
        assert!(det);
        assert_eq!(
            format!("{:.4}", c.rel_change),
            format!("{:.4}", d.rel_change)
        );
    }
}
