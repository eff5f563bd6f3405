//! `perfbisect triage TESTS [RANGE]`, the nightly perf sheriff: measure what the round needs
//! (the newest commit), find the change points of every test over its stored and imported
//! history, search each one not settled yet inside its gap — one search per gap for all the
//! tests that moved there, on one set of builds (the cache serves every test, and the search
//! prefers commits already built) — confirm each culprit as `find` does, and keep the
//! results per culprit commit in the cache ([`crate::store::findings`]); with `--attach`, one issue
//! per new culprit, a comment when tests join it or when a later step fixes it. A change of
//! the machine (a test's fingerprint) is said once, with what it did to each test measured
//! on a commit of both eras ([`eras`]), and blamed on no commit. Idempotent and resumable: a
//! second run with nothing new posts nothing.

mod eras;
mod gh;
mod outcome;
mod post;

use std::collections::BTreeMap;
use std::time::Instant;

use outcome::now;
pub use outcome::{Options, Outcome};
pub use post::{at_commits, title};

use crate::bisect::Outcome as Verdict;
use crate::config::Test;
use crate::pipeline::history::{History, Scope};
use crate::pipeline::workspace::Workspace;
pub use crate::report::triage::{Left, Posted};
use crate::store::findings::{self, Findings, State, TestStep};

/// A change point of one test, in the gap between the last commit measured at the old level
/// and the first at the new one.
struct Gap {
    from: gix::ObjectId,
    to: gix::ObjectId,
    subject: String,
}

/// Run the triage on `ws` (opened with the cache lock: two triages at once take turns).
pub fn triage(ws: &Workspace, opts: &Options<'_>) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let tests: Vec<Test> = ws.config.select(opts.tests)?.into_iter().cloned().collect();
    let repo = opts.attach.as_deref().map(parse_repo).transpose()?;
    let file = findings::path(&ws.cache.root);
    let mut f = findings::load(&file)?;
    let before = f.clone();
    let mut out = Outcome {
        findings: Findings::default(),
        changed: Vec::new(),
        left: Vec::new(),
        posted: Vec::new(),
        failures: Vec::new(),
        eras: Vec::new(),
        searches: 0,
        builds: 0,
        runs: 0,
        seconds: 0.0,
    };
    let job = Triage {
        ws,
        opts,
        started,
        tests: &tests,
        file: &file,
    };

    // 1. The round: the newest commit measured for every test that has no number there.
    job.measure_newest(&mut out)?;
    // With a RANGE, its old end too: a step among its first commits shows against it.
    job.measure_old_end(&mut out)?;
    // A change of the machine since the round before: said once, bridged by the newest
    // commit of the era before measured again here, so the history goes on from it.
    eras::machine_changes(ws, &tests, opts, &mut f, &|o| job.over_budget(o), &mut out)?;
    job.keep(&f)?;

    // 2. Every test's change points not settled yet, grouped by gap; 3. one search per gap.
    // The runs a search makes can show a step the rows before it could not (a regression and
    // its revert to the same bytes: the revert's search measures both builds side by side),
    // so the change points are looked at again after a pass that searched, until one shows
    // nothing new to search (at most `PASSES`).
    // Each culprit's reports by test: what an issue body shows under each test's name.
    let mut reports: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut order = Order::default();
    for _ in 0..PASSES {
        let (merged, o) = job.unsettled_gaps(&f)?;
        order = o;
        if merged.is_empty() || job.over_budget(&out) {
            // Still said as left when the budget stops it.
            job.leave(&merged, &mut out);
            break;
        }
        job.search_gaps(&merged, &mut f, &mut reports, &mut out)?;
    }

    // 4. A later step that returns a level fixes the finding that left it.
    let recipe = ws.config.build.recipe_hash();
    let digest = |c: &str| {
        gix::ObjectId::from_hex(c.as_bytes())
            .ok()
            .and_then(|id| crate::build::cas::read_manifest(&ws.cache, &id, recipe))
            .map(|m| m.digest)
    };
    let identical = |a: &str, b: &str| digest(a).is_some_and(|d| Some(d) == digest(b));
    fixes(&mut f, &tests, &order, &identical);
    job.keep(&f)?;

    // 5. Posting.
    if let Some((owner, name)) = &repo {
        let target = format!("{owner}/{name}");
        post::post_all(ws, &mut f, &file, &target, opts, &reports, &mut out)?;
    }
    out.changed = f
        .findings
        .iter()
        .filter(|x| before.get(&x.commit) != Some(*x))
        .map(|x| x.commit.clone())
        .collect();
    out.findings = f;
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

/// Passes of detection and search a night makes at most (each after the first only when the
/// one before searched something and its runs show a gap not searched yet).
const PASSES: usize = 3;

impl Triage<'_> {
    /// The gaps `merged` left unsearched by the budget, said in `out.left`.
    fn leave(&self, merged: &Gaps<'_>, out: &mut Outcome) {
        if !self.over_budget(out) {
            return;
        }
        for (gap, ts) in merged {
            for t in ts {
                let left = Left {
                    test: t.name.clone(),
                    from: gap.from.to_string(),
                    to: gap.to.to_string(),
                };
                if !out.left.contains(&left) {
                    out.left.push(left);
                }
            }
        }
    }

    /// One search per gap of `merged`: the tests that moved there, one after another on the
    /// same builds; each verdict recorded in `f` (kept after each) and its report in
    /// `reports`.
    fn search_gaps(
        &self,
        merged: &Gaps<'_>,
        f: &mut Findings,
        reports: &mut BTreeMap<String, BTreeMap<String, String>>,
        out: &mut Outcome,
    ) -> anyhow::Result<()> {
        let (ws, opts, job) = (self.ws, self.opts, self);
        for (gap, ts) in merged {
            let spec = format!("{}..{}", gap.from, gap.to);
            let names: Vec<&str> = ts.iter().map(|t| t.name.as_str()).collect();
            for t in ts {
                if job.over_budget(out) {
                    out.left.push(Left {
                        test: t.name.clone(),
                        from: gap.from.to_string(),
                        to: gap.to.to_string(),
                    });
                    continue;
                }
                ws.note(&format!(
                    "perfbisect: triage: searching {}..{} for {} ({} of the tests that moved \
                     there: {})",
                    crate::git::short(&gap.from),
                    crate::git::short(&gap.to),
                    t.name,
                    names.iter().position(|n| *n == t.name).map_or(1, |i| i + 1),
                    names.join(", ")
                ));
                let ask = crate::jobs::find::Ask {
                    range: &spec,
                    jobs: opts.jobs,
                    no_descend: false,
                    why: false,
                    no_why: false,
                    replay: false,
                };
                let (run, why) = crate::jobs::find::find(ws, (*t).clone(), &ask, Instant::now())?;
                out.searches += 1;
                let (b, r) = run.counts();
                out.builds += b;
                out.runs += r;
                job.record(f, t, gap, &run, &why, reports)?;
                job.keep(f)?;
            }
        }
        Ok(())
    }
}

/// The gaps not settled yet, each with the tests whose change point lies there.
type Gaps<'t> = Vec<(Gap, Vec<&'t Test>)>;

/// Each commit's place in history, per test (for what fixed what).
type Positions = BTreeMap<String, BTreeMap<String, usize>>;

/// What fixing needs of each test's history: each commit's place in it, and the place of the
/// first commit measured for the test here (a test that joined the job later has none before).
#[derive(Default)]
struct Order {
    pos: Positions,
    first: BTreeMap<String, usize>,
}

/// One `triage`: what it was asked, when it started, its tests and its findings' file.
struct Triage<'a> {
    ws: &'a Workspace,
    opts: &'a Options<'a>,
    started: Instant,
    tests: &'a [Test],
    file: &'a std::path::Path,
}

impl<'a> Triage<'a> {
    /// Keep the findings. A dry run changes no finding and marks no gap searched: the next
    /// real run searches and posts as if it had not run (what it measured stays in the store,
    /// as every run's does).
    fn keep(&self, f: &Findings) -> anyhow::Result<()> {
        if self.opts.dry_run {
            Ok(())
        } else {
            findings::save(self.file, f)
        }
    }

    /// Whether the budget is spent: no new search (nor the round) starts.
    fn over_budget(&self, out: &Outcome) -> bool {
        let opts = self.opts;
        opts.max_builds.is_some_and(|m| out.builds >= m)
            || opts.max_time.is_some_and(|t| self.started.elapsed() >= t)
    }

    /// The round: the newest commit (of the range, else HEAD) measured, as `run` would, for
    /// the tests with no number there, within the budget; its builds and runs go to `out`.
    fn measure_newest(&self, out: &mut Outcome) -> anyhow::Result<()> {
        let (ws, opts) = (self.ws, self.opts);
        let newest = match opts.range {
            Some(r) => ws.repo.range(r)?.commits.last().map(|c| c.id),
            None => Some(ws.repo.head()?),
        };
        // (Only the tests with no number there: said only when there are some.)
        let mut unmeasured: Vec<&Test> = Vec::new();
        if let Some(id) = newest {
            for t in self.tests {
                let key: [u8; 20] = id.as_bytes().try_into().unwrap_or([0; 20]);
                if !ws.samples_for(t, Some(&[id]))?.by_commit.contains_key(&key) {
                    unmeasured.push(t);
                }
            }
        }
        let Some(id) = newest.filter(|_| !unmeasured.is_empty() && !self.over_budget(out)) else {
            return Ok(());
        };
        let names: Vec<&str> = unmeasured.iter().map(|t| t.name.as_str()).collect();
        ws.note(&format!(
            "perfbisect: triage: measuring the newest commit, {}, for {} (no numbers there yet)",
            crate::git::short(&id),
            names.join(", ")
        ));
        let (b, r) = eras::measure_at(ws, opts, &names.join(","), id)?;
        out.builds += b;
        out.runs += r;
        Ok(())
    }

    /// With a RANGE: its old end (the commit before its first; its first for a root's
    /// history) measured, as `run` would, for the tests with no number there, within the
    /// budget. Nights of `run --shard` measure every Nth commit: without the old end, a step
    /// among the first commits would lie before the first number and never be seen. Whatever
    /// stays without numbers at the start (over the budget, a build that fails) is said: the
    /// commits no round covers, per test.
    fn measure_old_end(&self, out: &mut Outcome) -> anyhow::Result<()> {
        let (ws, opts) = (self.ws, self.opts);
        let Some(r) = opts.range else {
            return Ok(());
        };
        let chain = ws.chain_commits(r)?.0;
        let Some(first) = chain.first().map(|c| c.id) else {
            return Ok(());
        };
        let ids: Vec<gix::ObjectId> = chain.iter().map(|c| c.id).collect();
        let key = |id: &gix::ObjectId| -> [u8; 20] { id.as_bytes().try_into().unwrap_or([0; 20]) };
        // Per test, how many commits from the start have no number.
        let uncovered = |t: &Test| -> anyhow::Result<usize> {
            let s = ws.samples_for(t, Some(&ids))?;
            Ok(ids
                .iter()
                .position(|id| s.by_commit.contains_key(&key(id)))
                .unwrap_or(ids.len()))
        };
        let mut unmeasured: Vec<&Test> = Vec::new();
        for t in self.tests {
            if uncovered(t)? > 0 {
                unmeasured.push(t);
            }
        }
        if !unmeasured.is_empty() && !self.over_budget(out) {
            let names: Vec<&str> = unmeasured.iter().map(|t| t.name.as_str()).collect();
            ws.note(&format!(
                "perfbisect: triage: measuring the range's old end, {}, for {} (no numbers there: \
                 a step among the range's first commits is seen only against it)",
                crate::git::short(&first),
                names.join(", ")
            ));
            let (b, r) = eras::measure_at(ws, opts, &names.join(","), first)?;
            out.builds += b;
            out.runs += r;
        }
        for t in self.tests {
            let n = uncovered(t)?;
            if n == 0 || n >= ids.len() {
                continue;
            }
            ws.warn(&format!(
                "`{}`: the first {n} commit{} of {} ({}{}) {} no numbers, so a step among them \
                 is not seen: `perfbisect run {} {}^..{}` measures {}",
                t.name,
                if n == 1 { "" } else { "s" },
                r,
                crate::git::short(&ids[0]),
                if n > 1 {
                    format!("..{}", crate::git::short(&ids[n - 1]))
                } else {
                    String::new()
                },
                if n == 1 { "has" } else { "have" },
                t.name,
                ids[0].to_hex_with_len(10),
                ids[n - 1].to_hex_with_len(10),
                if n == 1 { "it" } else { "them" },
            ));
        }
        Ok(())
    }

    /// Every test's change points (and steps too few runs decide) not settled yet in `f`,
    /// grouped by gap, and each commit's place in each test's history.
    fn unsettled_gaps(&self, f: &Findings) -> anyhow::Result<(Gaps<'a>, Order)> {
        let (ws, opts) = (self.ws, self.opts);
        let mut groups: BTreeMap<(usize, String, String), (Gap, Vec<&Test>)> = BTreeMap::new();
        let mut order = Order::default();
        // The rows of every test (the repository is one thread's), then their change points
        // on every core: the tests are independent.
        let mut loaded = Vec::with_capacity(self.tests.len());
        for t in self.tests {
            // Of each run only its value and moment: change points need no more, and years of
            // cron rows are millions of runs a test.
            loaded.push(History::<crate::store::Observation>::of(
                ws,
                t,
                Scope::of(opts.range),
            )?);
        }
        let detected: Vec<crate::stats::Detection> = {
            use rayon::prelude::*;
            loaded.par_iter().map(History::detection).collect()
        };
        for (h, d) in loaded.iter().zip(detected) {
            let (t, rows): (&'a Test, _) = (h.test, &h.rows);
            order.pos.insert(
                t.name.clone(),
                rows.iter()
                    .enumerate()
                    .map(|(i, r)| (r.commit.id.to_string(), i))
                    .collect(),
            );
            if let Some(i) = rows.iter().position(|r| r.own > 0) {
                order.first.insert(t.name.clone(), i);
            }
            // Steps the stored runs cannot decide (cron rounds each at its own moment, too few runs)
            // are searched as the confirmed ones are: `find`'s interleaved runs decide them. A
            // move seen only across named machines is theirs, not a commit's: never searched.
            // An undecided step the levels place among a few commits is searched over its
            // whole span (the gap below its last commit alone may miss it).
            let steps = d.points.iter().map(|c| (c.index, c.index)).chain(
                d.undecided
                    .iter()
                    .filter(|u| u.why != crate::stats::changepoint::Reason::Machines)
                    .map(|u| (u.last_before + 1, u.index)),
            );
            for (start, index) in steps {
                let Some(from) = rows[..start].iter().rev().find(|r| !r.values.is_empty()) else {
                    continue;
                };
                let to = &rows[index];
                let (a, b) = (from.commit.id.to_string(), to.commit.id.to_string());
                if settled(f, &t.name, &a, &b, &order.pos[&t.name]) {
                    continue;
                }
                let e = groups.entry((index, a, b)).or_insert_with(|| {
                    (
                        Gap {
                            from: from.commit.id,
                            to: to.commit.id,
                            subject: to.commit.subject.clone(),
                        },
                        Vec::new(),
                    )
                });
                e.1.push(t);
            }
        }
        // (The same gap of two tests is one key whatever index their rows give it.)
        let mut merged: Gaps<'a> = Vec::new();
        for (_, (gap, ts)) in groups {
            match merged
                .iter_mut()
                .find(|(g, _)| g.from == gap.from && g.to == gap.to)
            {
                Some((_, all)) => all.extend(ts),
                None => merged.push((gap, ts)),
            }
        }
        Ok((merged, order))
    }

    /// Record in `f` the verdict of the search of `t` in `gap`: each culprit confirmed (its
    /// report kept in `reports` for the issue), or the change point unconfirmed; the gap is
    /// marked searched either way.
    fn record(
        &self,
        f: &mut Findings,
        t: &Test,
        gap: &Gap,
        run: &crate::jobs::find::FindRun,
        why: &[crate::pipeline::profile::Profiled],
        reports: &mut BTreeMap<String, BTreeMap<String, String>>,
    ) -> anyhow::Result<()> {
        let (from, to) = (gap.from.to_string(), gap.to.to_string());
        match &run.outcome {
            Verdict::Culprits(cs) => {
                let report = run.report(&self.opts.invocation);
                for c in cs {
                    let at = &run.commits[c.pos];
                    let fns = why
                        .iter()
                        .find(|(p, _)| *p == c.pos)
                        .and_then(|(_, w)| w.as_ref().ok())
                        .map(|w| {
                            w.changes
                                .iter()
                                .filter(|ch| ch.pct_of_total.abs() >= 0.01)
                                .take(3)
                                .map(|ch| format!("{} {:+.2} %", ch.function, ch.pct_of_total))
                                .collect()
                        })
                        .unwrap_or_default();
                    let step = report.finding(c).ledger_step(t, run.deterministic, fns);
                    f.confirmed(&at.id.to_string(), &at.subject, step, now());
                    f.mark_searched(&t.name, &from, &to, Some(&at.id.to_string()));
                    let md = crate::pipeline::issue::markdown(
                        self.ws,
                        run.report(&self.opts.invocation),
                        &run.blocks,
                        why,
                        f,
                    )?;
                    reports
                        .entry(at.id.to_string())
                        .or_default()
                        .insert(t.name.clone(), md);
                }
            }
            Verdict::NoChange { .. } => {
                f.unconfirmed(
                    &to,
                    &gap.subject,
                    &t.name,
                    "the change point did not show when its gap's ends were measured side by side (no change)",
                    now(),
                );
                f.mark_searched(&t.name, &from, &to, None);
            }
            Verdict::Inconclusive { reason, .. } => {
                f.unconfirmed(&to, &gap.subject, &t.name, reason, now());
                f.mark_searched(&t.name, &from, &to, None);
            }
        }
        Ok(())
    }
}

/// Whether `test`'s change point between `from` and `to` was searched already: the same gap,
/// a gap around it (the search measured commits inside, so the step's gap narrowed), or the
/// commit a search named.
fn settled(f: &Findings, test: &str, from: &str, to: &str, pos: &BTreeMap<String, usize>) -> bool {
    let at = |c: &str| pos.get(c).copied();
    f.searched.iter().filter(|s| s.test == test).any(|s| {
        s.culprit.as_deref() == Some(to)
            || (s.from == from && s.to == to)
            || matches!(
                (at(&s.from), at(from), at(to), at(&s.to)),
                (Some(a), Some(b), Some(c), Some(d)) if a <= b && c <= d
            )
    })
}

/// A later finding `b` fixes an earlier `a` when, for a test of both, its step goes back the
/// other way to the level `a` left (within the test's threshold of `a`'s old level), or to a
/// build byte-identical to `a`'s parent's. Then every test that moved at `b` back from `a`'s
/// level is recorded on `a` as its fix (`fix_steps`, said in the "fixed by" comment) and
/// dropped from `b`, never posted as news: `a`'s own tests, and the tests that joined the job
/// after `a` (first measured past it: their series starts at the level `a` left, so the
/// revert looks like a step of their own) whose step at `b` goes the fixing way (the other
/// kind than `a`'s, or any way to a byte-identical build).
fn fixes(f: &mut Findings, tests: &[Test], order: &Order, identical: &dyn Fn(&str, &str) -> bool) {
    let place = |test: &str, commit: &str| order.pos.get(test).and_then(|p| p.get(commit)).copied();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut moved: Vec<(String, String, TestStep)> = Vec::new();
    for a in &f.findings {
        if !matches!(a.state, State::New | State::Posted | State::Fixed) {
            continue;
        }
        for b in f.findings.iter().filter(|b| b.commit != a.commit) {
            // A finding fixed by another commit is that commit's.
            if a.state == State::Fixed && a.fixed_by.as_deref() != Some(b.commit.as_str()) {
                continue;
            }
            let same_build = a.tests.iter().any(|sa| identical(&sa.parent, &b.commit));
            let mut back = Vec::new();
            for sa in &a.tests {
                let Some(t) = tests.iter().find(|t| t.name == sa.test) else {
                    continue;
                };
                let Some(sb) = b.tests.iter().find(|s| s.test == sa.test) else {
                    continue;
                };
                let later = match (place(&t.name, &a.commit), place(&t.name, &b.commit)) {
                    (Some(pa), Some(pb)) => pb > pa,
                    _ => false,
                };
                let returns = sb.rel_change * sa.rel_change < 0.0
                    && (same_build || !t.threshold.reached(sa.before, sb.after));
                if later && returns {
                    back.push(sb.clone());
                }
            }
            if back.is_empty() {
                continue;
            }
            // The tests at `b` that joined after `a`.
            let kind = &a.tests[0].kind;
            for sb in b
                .tests
                .iter()
                .filter(|s| !a.tests.iter().any(|sa| sa.test == s.test))
            {
                let joined_after = match (order.first.get(&sb.test), place(&sb.test, &a.commit)) {
                    (Some(&first), Some(pa)) => first > pa,
                    // `a` is older than anything this test's history holds.
                    (Some(_), None) => true,
                    _ => false,
                };
                if joined_after && (same_build || &sb.kind != kind) {
                    back.push(sb.clone());
                }
            }
            pairs.push((a.commit.clone(), b.commit.clone()));
            for sb in back {
                moved.push((a.commit.clone(), b.commit.clone(), sb));
            }
        }
    }
    for (a, b) in pairs {
        f.fixed(&a, &b, now());
    }
    for (a, b, step) in moved {
        let test = step.test.clone();
        f.fix_step(&a, &b, step, now());
        f.drop_test(&b, &test);
    }
}

/// `OWNER/REPO`, or a usage error naming what is wrong.
fn parse_repo(s: &str) -> anyhow::Result<(String, String)> {
    // The same rules as an issue target's, without the number.
    let t = crate::publish::attach::Target::parse(&format!("{s}#1")).map_err(|_| {
        crate::error::UsageError::err(format!(
            "--attach {s}: write OWNER/REPO (letters, digits, `-`, `_` and `.`), e.g. curl/curl"
        ))
    })?;
    Ok((t.owner, t.repo))
}
