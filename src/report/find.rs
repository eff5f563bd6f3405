//! What `find` prints: the culprit(s) with the evidence, as text, JSON or Markdown for an issue.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bisect::{Culprit, Outcome};
use crate::config::{Direction, Test};
use crate::git::CommitInfo;

use super::finding::Finding;
use super::md;
use crate::base::text::{count, date, fmt_num};

/// Everything a `find` report shows.
pub struct FindReport<'a> {
    pub test: &'a Test,
    pub range: &'a str,
    /// Position 0 is the old end; 1.. the range's commits.
    pub commits: &'a [CommitInfo],
    pub outcome: &'a Outcome,
    pub probed: &'a [usize],
    pub notes: &'a [String],
    pub builds: usize,
    pub runs: usize,
    pub reused: usize,
    /// When the verdict is one `find` reached earlier and kept (seconds since the epoch):
    /// this invocation built and ran nothing, and says whose search it states.
    pub replayed: Option<u64>,
    /// Where the wall time went.
    pub time: TimeSpent,
    pub skipped: &'a [Skip],
    /// Commits of the searched range (`commits` may hold more: merged branches searched).
    pub searched: usize,
    /// Global options to repeat in reproduce commands (`--repo`, `--config`, `--cache` when
    /// given), shell-quoted, with a trailing space; empty for the defaults.
    pub invocation: &'a str,
    /// `(culprit, merge)`: a culprit found inside the branch that `merge` brought in.
    pub merges: &'a [(usize, usize)],
    /// The medians of the searched chain as a sparkline with its caption
    /// ([`super::spark::medians_line`]); printed when given.
    pub sparkline: Option<String>,
    /// Path of a plot of the range, relative to where the Markdown lives; the Markdown shows
    /// it when given.
    pub plot: Option<String>,
    pub seconds: f64,
    /// The search compared exact values (a deterministic metric, or no spread at both ends):
    /// its p-values (0 or 1) are no test's result, and the report says "deterministic".
    pub deterministic: bool,
    /// What imported rounds (cron results) told the search, when they were used.
    pub imported: Option<&'a ImportedGap>,
    /// How the runs were taken: windows side by side, the machine's drift, what could have
    /// been seen, the instructions counter.
    pub facts: &'a SearchFacts,
    /// Per culprit (by position), the functions whose cost changed from its parent to it, or
    /// why they were not profiled; empty when profiling was not asked for.
    pub why: &'a [crate::pipeline::profile::Profiled],
}

/// How a search measured, for the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SearchFacts {
    /// The metric does not follow the machine's load (a Cachegrind count, a deterministic
    /// value): a drift between windows is the program's, not the machine's speed.
    #[serde(skip)]
    pub load_free: bool,
    /// The metric is a count (instructions, or a deterministic value): the machine's speed
    /// does not move it, so a drift is never said as the machine's speed.
    #[serde(skip)]
    pub counted: bool,
    /// The largest move of one build's level between windows of time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftFact>,
    /// Windows of interleaved runs opened, the runs in them, and of those the runs of the
    /// commits measured again beside the probe (its anchors, the verification's parent): what
    /// interleaving cost.
    pub windows: usize,
    pub window_runs: usize,
    pub beside_runs: usize,
    /// The smallest relative change the runs of the ends could have seen (80 % power).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_detectable: Option<f64>,
    /// What counted the instructions of an instructions test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
    /// Runs of a window that went on several cores at once (each of another commit), and
    /// why they may: the metric does not follow the machine's load.
    pub parallel_runs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_why: Option<String>,
    /// Builds made beside measurements, for what the search might probe next, and how many of
    /// them it then did not need (they stay in the cache).
    pub ahead: usize,
    pub ahead_unused: usize,
    /// Builds of this search at commits it never measured, whether made ahead or in a k-ary
    /// round (they stay in the cache): with the pristine checks, what the builds beyond the
    /// ones measured went on.
    pub unprobed: usize,
}

/// How much this machine's speed moved during a search: one build measured at different times.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriftFact {
    /// (highest - lowest) window median, relative to the build's median.
    pub rel: f64,
    pub commit: String,
    pub windows: usize,
    /// Rank test of its lowest against its highest window.
    pub p_value: f64,
    /// More than the build's own noise could make (p < 0.01).
    pub significant: bool,
}

impl SearchFacts {
    /// "14 runs went side by side (other commits each, on several cores) and 3 builds beside
    /// the runs: instructions counted by Cachegrind, …", when any did.
    pub fn parallel_line(&self) -> Option<String> {
        let why = self.parallel_why.as_ref()?;
        if self.parallel_runs == 0 && self.ahead == 0 {
            return None;
        }
        Some(format!(
            "{} went side by side (each of another commit, on several cores) and {} beside the runs: {why}; a time or a memory peak is always measured one run at a time",
            count(self.parallel_runs, "run"),
            count(self.ahead, "build")
        ))
    }

    /// "this machine's speed moved 6.10 % during the search (...)", when it did by more than
    /// the note's precision ([`crate::stats::drift::SAID_FROM`]); for a count, "the same
    /// build's count moved".
    pub fn drift_line(&self, commits: &[CommitInfo]) -> Option<String> {
        let d = self
            .drift
            .as_ref()
            .filter(|d| d.significant && d.rel.abs() >= crate::stats::drift::SAID_FROM)?;
        let id = gix::ObjectId::from_hex(d.commit.as_bytes()).ok();
        let short = commits
            .iter()
            .find(|c| Some(c.id) == id)
            .map(|c| c.short())
            .unwrap_or_else(|| d.commit.chars().take(10).collect());
        // A value the machine's load does not move (a Cachegrind count) or a count of any
        // counter moved on its own: the program's doing (poll loops, timers), not the
        // machine's speed.
        let what = if self.load_free || self.counted {
            "the same build's count moved"
        } else {
            "this machine's speed moved"
        };
        Some(format!(
            "{what} {:.2} % during the search (the same build, {short}, measured in {} windows of time, {}); every decision compared runs taken side by side, so the drift fell on both sides alike",
            d.rel * 100.0,
            d.windows,
            crate::base::text::fmt_p(d.p_value)
        ))
    }

    /// "; 60 of the runs measured commits again beside the probes, in 9 windows side by side
    /// (interleaving)"; without `probes` (commits measured between the ends) the commits were
    /// measured beside each other, and it says that.
    pub fn interleaving_text(&self, probes: usize) -> String {
        if self.beside_runs == 0 {
            return String::new();
        }
        format!(
            "; {} of the runs measured commits again {}, in {} window{} side by side (interleaving)",
            self.beside_runs,
            if probes > 0 {
                "beside the probes"
            } else {
                "beside the commit compared with them"
            },
            self.windows,
            if self.windows == 1 { "" } else { "s" }
        )
    }
}

/// The gap between two imported rounds whose levels differ, which the search was narrowed to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportedGap {
    /// Imported samples of the test within the range.
    pub samples: usize,
    /// Commits of the range with imported samples.
    pub commits: usize,
    /// The last imported round before the step and the first after it.
    pub old: GapEnd,
    pub new: GapEnd,
    /// Commits strictly between them: the only ones built for the search.
    pub inside: usize,
    /// Whether the imported numbers of the two ends were used as they are (deterministic
    /// tests) or the ends were measured here first (noisy tests: another machine's level).
    pub trusted_ends: bool,
    /// The search of the gap did not confirm the step here, so the whole range was searched.
    pub fell_back: bool,
    /// What the gap's ends measured here when they did not differ (`fell_back`): the
    /// imported step does not show here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub here: Option<GapHere>,
}

/// The medians of an imported gap's ends measured here, and the p-value of their comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GapHere {
    pub old_median: f64,
    pub new_median: f64,
    pub p_value: f64,
}

/// One end of an [`ImportedGap`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GapEnd {
    pub commit: String,
    pub median: f64,
    pub n: usize,
    pub rounds: Vec<String>,
    pub machines: Vec<String>,
}

/// Where the wall time of a `find` went, from the command's start to its report: the parts
/// and the rest ([`TimeSpent::other`]) add up to the total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TimeSpent {
    /// Seconds waiting for build rounds.
    pub building: f64,
    /// Seconds measuring (runs, setup and teardown).
    pub measuring: f64,
    /// Rounds of builds waited for one after another.
    pub build_rounds: usize,
    /// Most builds run at once.
    pub most_parallel: usize,
    /// Seconds checking the verdict's builds against pristine rebuilds, and how many
    /// rebuilds that made (they are among the report's builds).
    pub checking: f64,
    pub checks: usize,
    /// Seconds profiling culprits under Cachegrind, and the profiles made (one run each).
    pub profiling: f64,
    pub profiles: usize,
    /// Seconds builds ran beside a measurement (counted in `building` and `measuring` both).
    pub both: f64,
}

impl TimeSpent {
    /// What the parts leave of `total` seconds: loading the stored samples, waiting for the
    /// cache's lock, the analysis, a second search's setup.
    pub fn other(&self, total: f64) -> f64 {
        (total - self.building - self.checking - self.measuring - self.profiling + self.both)
            .max(0.0)
    }
}

/// A commit stepped around, and why: it does not build, or its test failed every run (with
/// the tail of the last failure's output).
#[derive(Debug, Clone, PartialEq)]
pub struct Skip {
    pub pos: usize,
    pub reason: String,
}

/// "regression" or "improvement" for a relative change of a test.
pub fn judge(direction: Direction, rel_change: f64) -> &'static str {
    match (direction, rel_change > 0.0) {
        (Direction::Lower, true) | (Direction::Higher, false) => "regression",
        _ => "improvement",
    }
}

/// [`judge`] with its article, for prose: "a regression" or "an improvement".
pub fn judge_with_article(direction: Direction, rel_change: f64) -> &'static str {
    match judge(direction, rel_change) {
        "regression" => "a regression",
        _ => "an improvement",
    }
}

impl FindReport<'_> {
    /// Why the culprit at `pos` moved, when it was profiled.
    pub(crate) fn why_of(
        &self,
        pos: usize,
    ) -> Option<&Result<crate::pipeline::profile::Why, String>> {
        self.why.iter().find(|(p, _)| *p == pos).map(|(_, w)| w)
    }

    /// `v` in the test's unit at the scale every view of it picks (the sparkline's, the
    /// report's): "336.1 ms", "22.92 MB", "1001.8 units"; an exact value with every digit.
    pub(crate) fn quantity(&self, v: f64) -> String {
        super::units::level(v, &self.test.unit(), self.deterministic)
    }

    /// "9 builds (2 of them pristine checks), 45 runs, 2 profiles in 19m 9s; building ...".
    pub(crate) fn spent(&self) -> String {
        if let Some(at) = self.replayed {
            return format!(
                "nothing built or run now: the search stated is the one `find` made on {} (kept \
                 in the cache), in {}",
                date(i64::try_from(at).unwrap_or(i64::MAX)),
                crate::base::text::fmt_secs(self.seconds)
            );
        }
        let t = &self.time;
        format!(
            "{} build{}{}, {} run{}{} in {}{}",
            self.builds,
            if self.builds == 1 { "" } else { "s" },
            {
                // The distance to the limit: a bisection of N commits needs ⌈log2 N⌉ builds.
                let least = (self.searched.max(1) as f64).log2().ceil() as usize;
                let mut parts = Vec::new();
                if self.searched > 1 {
                    parts.push(format!(
                        "{least} at least for {}",
                        count(self.searched, "commit")
                    ));
                }
                match t.checks {
                    0 => {}
                    1 => parts.push("1 of them a pristine check".to_string()),
                    n => parts.push(format!("{n} of them pristine checks")),
                }
                if self.facts.ahead > 0 {
                    parts.push(format!("{} made ahead beside the runs", self.facts.ahead));
                }
                if self.facts.unprobed > 0 {
                    parts.push(format!(
                        "{} never measured (kept in the cache)",
                        self.facts.unprobed
                    ));
                }
                if parts.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", parts.join("; "))
                }
            },
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            match t.profiles {
                0 => String::new(),
                n => format!(", {}", count(n, "profile")),
            },
            crate::base::text::fmt_secs(self.seconds),
            if self.reused > 0 {
                format!(" ({} stored samples reused)", self.reused)
            } else {
                String::new()
            }
        ) + &self.time_line()
            + &self.facts.interleaving_text(
                self.probed
                    .iter()
                    .filter(|&&p| p != 0 && p != self.searched)
                    .count(),
            )
    }

    /// "; building 12s in 3 rounds (up to 4 at once), checking builds 40s, measuring 2s,
    /// profiling 9s, other 0.3s": the parts of the total, which add up to it.
    fn time_line(&self) -> String {
        let t = &self.time;
        if t.build_rounds == 0 && t.measuring == 0.0 && t.checks == 0 && t.profiles == 0 {
            return String::new();
        }
        let other = t.other(self.seconds);
        let mut parts = Vec::new();
        if t.build_rounds > 0 {
            parts.push(format!(
                "building {} in {}{}",
                crate::base::text::fmt_secs(t.building),
                count(t.build_rounds, "round"),
                if t.most_parallel > 1 {
                    format!(" (up to {} at once)", t.most_parallel)
                } else {
                    String::new()
                }
            ));
        }
        if t.checks > 0 {
            parts.push(format!(
                "checking builds {}",
                crate::base::text::fmt_secs(t.checking)
            ));
        }
        parts.push(format!(
            "measuring {}",
            crate::base::text::fmt_secs(t.measuring)
        ));
        if t.both > 0.0 {
            parts.push(format!(
                "both at once {}",
                crate::base::text::fmt_secs(t.both)
            ));
        }
        if t.profiles > 0 {
            parts.push(format!(
                "profiling {}",
                crate::base::text::fmt_secs(t.profiling)
            ));
        }
        parts.push(format!("other {}", crate::base::text::fmt_secs(other)));
        format!("; {}", parts.join(", "))
    }

    /// What a "no change" could have seen: any change for a deterministic test, else the
    /// smallest change these runs could have detected.
    fn detectable(&self, min_detectable: f64) -> String {
        if self.deterministic {
            "any change of at least the threshold would have been seen".to_string()
        } else {
            format!(
                "a change of {:.2} % or more would have been detected",
                min_detectable * 100.0
            )
        }
    }

    /// The p-value as `p = …` (`sci`: in scientific notation, else with two decimals), or
    /// "deterministic" when the values were compared exactly and the p is no test's result.
    pub(crate) fn evidence(&self, p: f64, sci: bool) -> String {
        if self.deterministic {
            "exact".into()
        } else if sci {
            crate::base::text::fmt_p(p)
        } else {
            format!("p = {p:.2}")
        }
    }

    /// Where imported rounds narrowed the search to a gap of the range: "the 6 commits after
    /// `2f2e060a83` up to `52b19845b5`, the gap the imported rounds show" (the chain searched,
    /// not the range asked); `None` when the range itself was searched.
    pub(crate) fn gap_searched(&self) -> Option<String> {
        let g = self.imported.filter(|g| !g.fell_back)?;
        let short = |c: &str| c.chars().take(10).collect::<String>();
        Some(format!(
            "{} after {} up to {}, the gap the imported rounds show",
            crate::base::text::count(self.searched, "commit"),
            short(&g.old.commit),
            short(&g.new.commit)
        ))
    }

    /// The merge that brought the commit at `pos` in, if it was found inside a merged branch.
    pub(crate) fn merge_of(&self, pos: usize) -> Option<usize> {
        self.merges.iter().find(|(c, _)| *c == pos).map(|&(_, m)| m)
    }

    /// "95 % interval +6.90 % to +7.90 %" of a culprit's change, when it has one that is not
    /// a single value.
    pub(crate) fn interval_text(&self, c: &Culprit) -> Option<String> {
        let (lo, hi) = c
            .interval
            .filter(|(lo, hi)| lo != hi && !self.deterministic)?;
        Some(format!(
            "{} % interval {:+.2} % to {:+.2} %",
            fmt_num(crate::stats::step::INTERVAL_LEVEL * 100.0),
            lo * 100.0,
            hi * 100.0
        ))
    }

    /// The two-sample test behind a culprit's p-value.
    pub(crate) fn test_name(&self, c: &Culprit) -> &'static str {
        let counted = matches!(self.test.metric, crate::config::Metric::Instructions);
        crate::stats::step::StepTest::of_pair(counted, c.windows).name()
    }

    /// Which runs a culprit's levels are the medians of, and where its change comes from:
    /// "medians of the 10 vs 10 runs taken side by side"; over several windows of time the new
    /// level is an estimate, and named as one ("window-adjusted").
    pub(crate) fn basis(&self, c: &Culprit) -> String {
        let runs = format!(
            "{} vs {} run{}",
            c.n_before,
            c.n_after,
            if c.n_before == 1 && c.n_after == 1 {
                ""
            } else {
                "s"
            }
        );
        match c.windows {
            _ if self.deterministic => format!("medians of {runs}"),
            0 => format!("medians of all {runs}"),
            1 => format!("medians of the {runs} taken side by side"),
            // The new level printed is the old one moved by the change estimated window by
            // window: an estimate, named as one (the culprit's own runs' median can differ by
            // what the machine's speed moved between the windows).
            k => format!(
                "the parent's level the median of its {} run{} taken side by side with the \
                 culprit's, the culprit's window-adjusted (the parent's moved by the change \
                 estimated window by window over the {k} windows of time holding runs of both, \
                 {} vs {} runs)",
                c.n_before,
                if c.n_before == 1 { "" } else { "s" },
                c.n_before,
                c.n_after
            ),
        }
    }

    /// What a culprit's confirmation rests on, from its evidence: the interleaved re-runs of
    /// parent and culprit (counted, with their windows), or exact values; `None` when it was
    /// not confirmed. The one phrase every view prints.
    pub(crate) fn confirmation(&self, c: &Culprit) -> Option<String> {
        if !c.verified {
            return None;
        }
        let s = |n: usize| if n == 1 { "" } else { "s" };
        Some(if c.reruns > 0 {
            format!(
                "confirmed by {} interleaved re-run{} of parent and culprit in {} window{} of time",
                c.reruns,
                s(c.reruns),
                c.rerun_windows,
                s(c.rerun_windows)
            )
        } else if self.deterministic {
            format!(
                "confirmed by exact values ({} run{} of the parent, {} of the culprit, each side's alike)",
                c.n_before,
                s(c.n_before),
                c.n_after
            )
        } else {
            format!("confirmed by the stored runs alone ({})", self.basis(c))
        })
    }

    fn culprit_lines(&self, o: &mut String, f: &Finding<'_>, label: &str) {
        let (c, at, parent) = (f.culprit, f.at, f.last_old);
        let _ = writeln!(o, "{label}: {} {}", at.short(), at.subject);
        let _ = writeln!(o, "  author {}, {}", at.author, date(at.time));
        let (before, after) =
            super::units::level_pair(c.before, c.after, &self.test.unit(), self.deterministic);
        let _ = writeln!(
            o,
            "  {}: {} -> {} ({}, {}{}), {}, {}{}",
            self.test.name,
            before,
            after,
            crate::base::text::fmt_rel(c.rel_change, 2),
            judge_with_article(self.test.direction, c.rel_change),
            self.interval_text(c)
                .map(|i| format!("; {i}"))
                .unwrap_or_default(),
            self.evidence(c.p_value, true),
            self.basis(c),
            match self.confirmation(c) {
                Some(how) => format!(", {how}"),
                None => ", NOT confirmed".to_string(),
            }
        );
        if c.parent + 1 == c.pos {
            let _ = writeln!(o, "  parent {} {}", parent.short(), parent.subject);
        } else {
            let _ = writeln!(
                o,
                "  last commit measured at the old level: {} {}",
                parent.short(),
                parent.subject
            );
        }
        let mut pos = c.pos;
        while let Some(m) = self.merge_of(pos) {
            let mc = &self.commits[m];
            let _ = writeln!(o, "  merged by {} {}", mc.short(), mc.subject);
            pos = m;
        }
        if c.candidates.len() > 1 {
            let _ = writeln!(
                o,
                "  {}",
                if c.verified {
                    "ambiguous: commits that cannot be built or measured sit between; any of these may be the culprit:"
                } else {
                    "still in doubt: the culprit is one of these commits:"
                }
            );
            let n = c.candidates.len();
            for (i, &p) in c.candidates.iter().enumerate() {
                // A long list is cut in the middle: its ends say where the doubt lies.
                if n > 12 && (6..n - 3).contains(&i) {
                    if i == 6 {
                        let _ = writeln!(o, "    ... {} more ...", n - 9);
                    }
                    continue;
                }
                let _ = writeln!(
                    o,
                    "    {} {}",
                    self.commits[p].short(),
                    self.commits[p].subject
                );
            }
        }
        let _ = writeln!(o, "  reproduce: {}", f.reproduce[0]);
    }
}

impl<'a> FindReport<'a> {
    /// Culprit `c` of this search as every view states it.
    pub fn finding(&self, c: &'a Culprit) -> Finding<'a> {
        let r = self;
        let (at, last_old) = (&r.commits[c.pos], &r.commits[c.parent]);
        let pb = format!("perfbisect {}", r.invocation);
        let (name, old, new) = (&r.test.name, last_old.id, at.id);
        Finding {
            culprit: c,
            at,
            last_old,
            commit: at.id.to_string(),
            subject: at.subject.clone(),
            author: at.author.clone(),
            date: date(at.time),
            parent: last_old.id.to_string(),
            before: super::finding::Level {
                median: c.before,
                n: c.n_before,
            },
            after: super::finding::Level {
                median: c.after,
                n: c.n_after,
            },
            rel_change: c.rel_change,
            rel_change_interval: c.interval.map(|(lo, hi)| [lo, hi]),
            windows: c.windows,
            p_value: c.p_value,
            candidates: c
                .candidates
                .iter()
                .map(|&p| r.commits[p].id.to_string())
                .collect(),
            verified: c.verified,
            reruns: c.reruns,
            rerun_windows: c.rerun_windows,
            kind: judge(r.test.direction, c.rel_change),
            merge: r.merge_of(c.pos).map(|m| r.commits[m].id.to_string()),
            why: r.why_of(c.pos).map(super::why::json),
            reproduce: vec![
                format!("{pb}compare {name} {old} {new}"),
                format!(
                    "git bisect start {new} {old} && git bisect run {pb}step {name} --old {old} \
                     --new {new}; git bisect reset"
                ),
            ],
        }
    }
}

/// Terminal text.
pub fn text(r: &FindReport<'_>) -> String {
    let mut o = String::new();
    match r.outcome {
        Outcome::Culprits(cs) => {
            if cs.len() > 1 {
                let _ = writeln!(o, "{} moved {}:", count(cs.len(), "commit"), r.test.name);
            }
            for (i, c) in cs.iter().enumerate() {
                let label = if cs.len() > 1 {
                    format!("culprit {}", i + 1)
                } else {
                    "culprit".into()
                };
                r.culprit_lines(&mut o, &r.finding(c), &label);
                if let Some(w) = r.why_of(c.pos) {
                    o.push_str(&super::why::text(w));
                }
            }
        }
        Outcome::NoChange {
            before,
            after,
            p_value,
            min_detectable,
        } => {
            let _ = writeln!(
                o,
                "no change: {} is {} at the old end and {} at the new end ({}); {}",
                r.test.name,
                r.quantity(*before),
                r.quantity(*after),
                r.evidence(*p_value, false),
                r.detectable(*min_detectable)
            );
        }
        Outcome::Inconclusive { reason, best_guess } => {
            let _ = writeln!(o, "inconclusive: {reason}");
            if let Some(c) = best_guess {
                r.culprit_lines(&mut o, &r.finding(c), "best guess (unconfirmed)");
            }
        }
    }
    if let Some(sp) = &r.sparkline {
        let _ = writeln!(o, "{sp}");
    }
    for n in r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    if let Some(d) = r.facts.drift_line(r.commits) {
        let _ = writeln!(o, "note: {d}");
    }
    if let Some(c) = &r.facts.counter {
        let _ = writeln!(o, "note: instructions counted by {c}");
    }
    if let Some(p) = r.facts.parallel_line() {
        let _ = writeln!(o, "note: {p}");
    }
    // Neighbours skipped for the same reason (a stretch that crashes) are said once.
    let mut i = 0;
    while i < r.skipped.len() {
        let s = &r.skipped[i];
        let mut j = i + 1;
        while j < r.skipped.len()
            && r.skipped[j].reason == s.reason
            && r.skipped[j].pos == r.skipped[j - 1].pos + 1
        {
            j += 1;
        }
        let c = &r.commits[s.pos];
        let who = if j - i == 1 {
            format!("{} {}", c.short(), c.subject)
        } else {
            let last = &r.commits[r.skipped[j - 1].pos];
            format!(
                "{} commits, {} {} .. {} {}",
                j - i,
                c.short(),
                c.subject,
                last.short(),
                last.subject
            )
        };
        let mut lines = s.reason.trim_end().lines();
        let first = lines.next().unwrap_or("");
        let _ = writeln!(o, "skipped {who}: {first}");
        for l in lines {
            let _ = writeln!(o, "    {l}");
        }
        i = j;
    }
    let probed: Vec<String> = r.probed.iter().map(|&p| r.commits[p].short()).collect();
    let _ = writeln!(
        o,
        "searched {}: {}",
        match r.gap_searched() {
            Some(g) => format!("{}, only {g}", r.range),
            None => format!("{} ({})", r.range, count(r.searched, "commit")),
        },
        r.spent()
    );
    if !probed.is_empty() {
        let _ = writeln!(o, "probed in order: {}", probed.join(" "));
    }
    o
}

/// `--format md`: a report to paste into a bug tracker.
pub fn markdown(r: &FindReport<'_>) -> String {
    let mut o = String::new();
    let t = r.test;
    let culprits: Vec<(&Culprit, bool)> = match r.outcome {
        Outcome::Culprits(cs) => cs.iter().map(|c| (c, true)).collect(),
        Outcome::Inconclusive {
            best_guess: Some(c),
            ..
        } => vec![(c, false)],
        _ => Vec::new(),
    };
    md_headline(&mut o, r);
    if let Some(d) = &t.description {
        let _ = writeln!(
            o,
            "{} ({}, {} is better).\n",
            md_escape(d),
            md_escape(&t.metric.describe()),
            t.direction.as_str()
        );
    }
    sparkline_and_plot(&mut o, r);
    for (k, (c, confirmed)) in culprits.iter().enumerate() {
        md_culprit(&mut o, r, (k, culprits.len()), &r.finding(c), *confirmed);
    }
    md_footer(&mut o, r);
    o
}

/// The headline of a Markdown report: the verdict, and the reason of an inconclusive one.
fn md_headline(o: &mut String, r: &FindReport<'_>) {
    let t = r.test;
    match r.outcome {
        Outcome::Culprits(cs) => {
            let c = &cs[0];
            let _ = writeln!(
                o,
                "### {}: {} {} at {}\n",
                md::code(&t.name),
                crate::base::text::fmt_rel(c.rel_change, 2),
                judge(t.direction, c.rel_change),
                r.commits[c.pos].short()
            );
        }
        Outcome::NoChange { .. } => {
            let _ = writeln!(
                o,
                "### {}: no change in {}\n",
                md::code(&t.name),
                md::code(r.range)
            );
        }
        Outcome::Inconclusive { reason, .. } => {
            let _ = writeln!(
                o,
                "### {}: inconclusive in {}\n",
                md::code(&t.name),
                md::code(r.range)
            );
            let _ = writeln!(o, "{}\n", md_escape(reason));
        }
    }
}

/// One culprit's section of a Markdown report, the `k`th (from 0) `of` them: parent and culprit,
/// the change with its evidence, the commit, why it moved and how to reproduce it.
fn md_culprit(
    o: &mut String,
    r: &FindReport<'_>,
    (k, of): (usize, usize),
    f: &Finding<'_>,
    confirmed: bool,
) {
    let t = r.test;
    let several = of > 1;
    let (c, at, parent) = (f.culprit, f.at, f.last_old);
    if several {
        let _ = writeln!(
            o,
            "#### {} of {}: {} {} at `{}` {}\n",
            k + 1,
            of,
            crate::base::text::fmt_rel(c.rel_change, 2),
            judge(t.direction, c.rel_change),
            at.short(),
            md_escape(&at.subject)
        );
    }
    // Over several windows the new level is an estimate (see `basis`), named as one.
    let adjusted = c.windows > 1 && !r.deterministic;
    let _ = writeln!(o, "| | commit | level | runs |\n|---|---|---:|---:|");
    for (role, commit, level, n) in [
        ("before", parent, c.before, c.n_before),
        ("after", at, c.after, c.n_after),
    ] {
        let cells = [
            role.to_string(),
            format!("`{}` {}", commit.short(), md_escape(&commit.subject)),
            format!(
                "{}{}",
                md_escape(&r.quantity(level)),
                if adjusted && role == "after" {
                    " (window-adjusted)"
                } else {
                    " (median)"
                }
            ),
            n.to_string(),
        ];
        let _ = writeln!(o, "{}", md::row(&cells));
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "- **{}**: {} ({}{}), {}; {}{}",
        if confirmed {
            "culprit"
        } else {
            "best guess, unconfirmed"
        },
        crate::base::text::fmt_rel(c.rel_change, 2),
        judge(t.direction, c.rel_change),
        r.interval_text(c)
            .map(|i| format!("; {i}"))
            .unwrap_or_default(),
        if r.deterministic {
            "exact (values compared as they are)".to_string()
        } else {
            format!(
                "{} ({})",
                crate::base::text::fmt_p(c.p_value),
                r.test_name(c)
            )
        },
        md_escape(&r.basis(c)),
        r.confirmation(c)
            .map(|how| format!("; {how}"))
            .unwrap_or_default()
    );
    let _ = writeln!(o, "- author: {}, {}", md_escape(&at.author), date(at.time));
    let _ = writeln!(o, "- commit: `{}`", at.id);
    if let Some(m) = r.merge_of(c.pos) {
        let mc = &r.commits[m];
        let _ = writeln!(o, "- merged by `{}` {}", mc.short(), md_escape(&mc.subject));
    }
    if c.candidates.len() > 1 {
        let _ = writeln!(
            o,
            "- {}: candidates {}",
            if c.verified {
                "ambiguous, commits that cannot be built or measured sit between"
            } else {
                "still in doubt"
            },
            candidate_list(r, c)
        );
    }
    let _ = writeln!(o);
    if let (true, Some(w)) = (confirmed, r.why_of(c.pos)) {
        o.push_str(&super::why::markdown(w));
    }
    reproduce(o, r, f);
}

/// The end of a Markdown report: a no-change verdict's numbers, the notes, and what was searched.
fn md_footer(o: &mut String, r: &FindReport<'_>) {
    if let Outcome::NoChange {
        before,
        after,
        p_value,
        min_detectable,
    } = r.outcome
    {
        let _ = writeln!(
            o,
            "Old end {}, new end {} ({}); {}.\n",
            md_escape(&r.quantity(*before)),
            md_escape(&r.quantity(*after)),
            r.evidence(*p_value, false),
            r.detectable(*min_detectable)
        );
    }
    for n in r.notes {
        let _ = writeln!(o, "- note: {}", super::md::prose(n));
    }
    if let Some(d) = r.facts.drift_line(r.commits) {
        let _ = writeln!(o, "- note: {}", super::md::prose(&d));
    }
    if let Some(c) = &r.facts.counter {
        let _ = writeln!(o, "- note: instructions counted by {}", md_escape(c));
    }
    if let Some(p) = r.facts.parallel_line() {
        let _ = writeln!(o, "- note: {}", super::md::prose(&p));
    }
    let _ = writeln!(
        o,
        "Searched {} ({}, first parent): {}.\n",
        md::code(r.range),
        count(r.searched, "commit"),
        r.spent()
    );
}

/// The sparkline and the plot (by relative path) of a Markdown report, when there are any.
pub(super) fn sparkline_and_plot(o: &mut String, r: &FindReport<'_>) {
    let t = r.test;
    if let Some(sp) = &r.sparkline {
        let _ = writeln!(o, "{}\n", md_sparkline(sp));
    }
    if let Some(p) = &r.plot {
        let _ = writeln!(
            o,
            "{}\n",
            md_image(&format!("{} over {}", t.name, r.range), p)
        );
    }
}

/// Every commit that may be the culprit, as Markdown code spans: "`abc`, `def`".
pub(super) fn candidate_list(r: &FindReport<'_>, c: &Culprit) -> String {
    let all: Vec<String> = c
        .candidates
        .iter()
        .map(|&p| format!("`{}`", r.commits[p].short()))
        .collect();
    if all.len() > 12 {
        format!(
            "{}, … ({} more) …, {} ({} in all)",
            all[..6].join(", "),
            all.len() - 9,
            all[all.len() - 3..].join(", "),
            all.len()
        )
    } else {
        all.join(", ")
    }
}

/// The commands that reproduce one culprit, as pasted into a shell in the repository: the
/// before/after comparison and a `git bisect run` over the parent..culprit step.
pub(crate) fn reproduce(o: &mut String, r: &FindReport<'_>, f: &Finding<'_>) {
    let t = r.test;
    let body = f.reproduce.join("\n") + "\n";
    // The paths in the invocation are the user's: a fence longer than any backticks in them.
    let fence = md::fence(&body);
    // A report of several culprits has a block for each: its title says whose it is.
    let _ = writeln!(
        o,
        "<details><summary>Reproduce the {} at {}</summary>\n",
        f.kind,
        f.at.short()
    );
    let _ = writeln!(o, "{fence}sh\n{body}{fence}\n");
    let _ = writeln!(
        o,
        "Test command: {}, metric {}.",
        md::code(&t.command),
        md::code(&t.metric.describe())
    );
    let _ = writeln!(o, "</details>\n");
}

/// A sparkline line for Markdown: the bars as code (monospace, so they line up), the caption
/// after them as text.
pub(crate) fn md_sparkline(line: &str) -> String {
    match line.split_once(' ') {
        Some((bars, rest)) => format!("{} {}", md::code(bars), md_escape(rest)),
        None => md::code(line),
    }
}

/// A Markdown image of the plot at `path` (relative to the Markdown file).
pub(crate) fn md_image(alt: &str, path: &str) -> String {
    // Spaces and parentheses would end the link target early.
    let target: String = path
        .chars()
        .map(|c| match c {
            ' ' => "%20".to_string(),
            '(' => "%28".to_string(),
            ')' => "%29".to_string(),
            c => c.to_string(),
        })
        .collect();
    // `<` and `>` would end the target (or open HTML) too.
    let target = target.replace('<', "%3C").replace('>', "%3E");
    format!("![{}]({target})", md_escape(alt))
}

/// Untrusted text for a Markdown table cell or line: it renders as the text it is
/// ([`md::text`]: no HTML, links, images, mentions or cross-references; pipes escaped, line
/// breaks as spaces).
pub(crate) fn md_escape(s: &str) -> String {
    md::text(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_def(direction: &str) -> Test {
        let cfg = crate::config::parse(
            &format!(
                "[build]\ncommand = \"true\"\n[tests.size]\ncommand = \"./app\"\nunit = \"bytes\"\ndirection = \"{direction}\"\n"
            ),
            std::path::Path::new("/tmp/perfbisect.toml"),
        )
        .unwrap();
        cfg.test("size").unwrap().clone()
    }

    fn commits() -> Vec<CommitInfo> {
        (0..3u8)
            .map(|i| CommitInfo {
                id: gix::ObjectId::from_bytes_or_panic(&[i + 1; 20]),
                subject: format!("Commit {i}"),
                author: "Dev <dev@example.com>".into(),
                time: 1_700_000_000,
            })
            .collect()
    }

    /// Issue 50: a count's drift is never said as the machine's speed, and no drift too
    /// small to read ("0.00 %") is said at all.
    #[test]
    fn a_drift_note_names_what_moved_and_only_a_readable_move() {
        let cs = commits();
        let facts = |rel: f64, counted: bool| SearchFacts {
            counted,
            drift: Some(DriftFact {
                rel,
                commit: cs[1].id.to_string(),
                windows: 3,
                p_value: 7.9e-3,
                significant: true,
            }),
            ..SearchFacts::default()
        };
        let time = facts(0.061, false).drift_line(&cs).unwrap();
        assert!(
            time.starts_with(
                "this machine's speed moved 6.10 % during the search (the same build, "
            ),
            "{time}"
        );
        let count = facts(0.0002, true).drift_line(&cs).unwrap();
        assert!(
            count.starts_with("the same build's count moved 0.02 % during the search"),
            "{count}"
        );
        assert!(!count.contains("machine's speed"), "{count}");
        assert_eq!(facts(1.435e-7, true).drift_line(&cs), None);
        assert_eq!(facts(0.00009, false).drift_line(&cs), None);
    }

    fn culprit(before: f64, after: f64, p_value: f64) -> Culprit {
        Culprit {
            pos: 2,
            parent: 1,
            candidates: vec![2],
            before,
            after,
            n_before: 1,
            n_after: 1,
            rel_change: crate::stats::rel_change(before, after),
            interval: None,
            windows: 0,
            p_value,
            verified: true,
            reruns: 0,
            rerun_windows: 0,
        }
    }

    fn render(test: &Test, outcome: &Outcome, deterministic: bool) -> (String, String, String) {
        render_with(test, outcome, deterministic, &[])
    }

    fn render_with(
        test: &Test,
        outcome: &Outcome,
        deterministic: bool,
        why: &[crate::pipeline::profile::Profiled],
    ) -> (String, String, String) {
        let commits = commits();
        let r = FindReport {
            test,
            range: "a..b",
            commits: &commits,
            outcome,
            probed: &[1, 2],
            notes: &[],
            builds: 2,
            runs: 2,
            reused: 0,
            replayed: None,
            time: TimeSpent::default(),
            skipped: &[],
            merges: &[],
            searched: commits.len() - 1,
            invocation: "",
            sparkline: None,
            plot: None,
            seconds: 1.0,
            deterministic,
            imported: None,
            facts: &SearchFacts::default(),
            why,
        };
        (
            text(&r),
            markdown(&r),
            super::super::find_json::json(&r).unwrap(),
        )
    }

    #[test]
    fn the_summary_counts_pristine_checks_and_profiles_and_its_parts_add_up() {
        let t = test_def("lower");
        let commits = commits();
        let o = Outcome::Culprits(vec![culprit(1000.0, 1100.0, 1e-5)]);
        let time = TimeSpent {
            building: 480.0,
            measuring: 240.0,
            build_rounds: 5,
            most_parallel: 1,
            checking: 180.0,
            checks: 2,
            profiling: 150.0,
            profiles: 2,
            both: 60.0,
        };
        let r = FindReport {
            test: &t,
            range: "a..b",
            commits: &commits,
            outcome: &o,
            probed: &[1, 2],
            notes: &[],
            builds: 9,
            runs: 45,
            reused: 0,
            replayed: None,
            time,
            skipped: &[],
            merges: &[],
            searched: 2,
            invocation: "",
            sparkline: None,
            plot: None,
            seconds: 1149.0,
            deterministic: false,
            imported: None,
            facts: &SearchFacts::default(),
            why: &[],
        };
        assert_eq!(
            r.spent(),
            "9 builds (1 at least for 2 commits; 2 of them pristine checks), 45 runs, 2 profiles \
             in 19m 9s; building 8m in 5 rounds, checking builds 3m, measuring 4m, both at once \
             1m, profiling 2m 30s, other 2m 39s"
        );
        let j: serde_json::Value =
            serde_json::from_str(&super::super::find_json::json(&r).unwrap()).unwrap();
        let part = |k: &str| j["time"][k].as_f64().unwrap();
        assert_eq!(j["pristine_checks"], 2);
        assert_eq!(j["profiles"], 2);
        let sum = [
            "building_s",
            "checking_s",
            "measuring_s",
            "profiling_s",
            "waiting_s",
        ]
        .iter()
        .map(|k| part(k))
        .sum::<f64>()
            - part("both_s");
        assert_eq!(sum, part("total_s"), "{j}");
    }

    #[test]
    fn every_culprit_shows_why_it_moved() {
        let t = test_def("lower");
        let mut second = culprit(1000.0, 1100.0, 1e-4);
        (second.pos, second.parent, second.candidates) = (1, 0, vec![1]);
        let o = Outcome::Culprits(vec![culprit(1100.0, 1300.0, 1e-5), second]);
        let why = |parent: u8, culprit: u8, function: &str| crate::pipeline::profile::Why {
            parent: format!("{parent:02x}").repeat(20),
            culprit: format!("{culprit:02x}").repeat(20),
            total_before: 1_000_000,
            total_after: 1_200_000,
            changes: vec![crate::pipeline::profile::Change {
                function: function.into(),
                file: "app.c".into(),
                line: Some(7),
                before: 100_000,
                after: 300_000,
                delta: 200_000,
                pct_of_total: 20.0,
                pct_of_function: Some(200.0),
            }],
            explained: Some(1.0),
            parent_profile: "p".into(),
            culprit_profile: "c".into(),
        };
        let profiled = [
            (2, Ok(why(2, 3, "slow_path"))),
            (
                1,
                Err("the test under Valgrind ended with signal 11".to_string()),
            ),
        ];
        let (text, md, json) = render_with(&t, &o, false, &profiled);
        let (first, rest) = text.split_once("culprit 2:").unwrap();
        assert!(first.contains("slow_path"), "{text}");
        assert!(
            rest.contains("why: not profiled: the test under Valgrind ended with signal 11"),
            "{text}"
        );
        let (md1, md2) = md.split_once("#### 2 of 2").unwrap();
        assert!(
            md1.contains("`slow_path`") && !md2.contains("`slow_path`"),
            "{md}"
        );
        assert!(
            md2.contains("Not profiled: the test under Valgrind"),
            "{md}"
        );
        let j: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            j["why"]["changes"][0]["function"], "slow_path",
            "the first's: {j}"
        );
        assert_eq!(
            j["culprits"][0]["why"]["changes"][0]["function"],
            "slow_path"
        );
        assert!(j["culprits"][1]["why"]["unavailable"].is_string(), "{j}");
    }

    #[test]
    fn deterministic_culprits_say_so_instead_of_a_p_of_zero() {
        let t = test_def("lower");
        let o = Outcome::Culprits(vec![culprit(3072.0, 3064.0, 0.0)]);
        let (text, md, json) = render(&t, &o, true);
        assert!(
            text.contains("size: 3072 bytes -> 3064 bytes (-0.26 %, an improvement), exact, medians of 1 vs 1 run"),
            "{text}"
        );
        assert!(!text.contains("p = "), "{text}");
        assert!(!md.contains("p = ") && !md.contains("Mann-Whitney"), "{md}");
        assert!(md.contains("exact (values compared as they are)"), "{md}");
        let j: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(j["deterministic"], true, "{json}");

        // The same numbers from a noisy search keep their p-value.
        let (text, md, _) = render(
            &t,
            &Outcome::Culprits(vec![culprit(3072.0, 3064.0, 1.5e-4)]),
            false,
        );
        assert!(text.contains("an improvement), p = 1.50e-4"), "{text}");
        assert!(
            md.contains("p = 1.50e-4 (two-sided Mann-Whitney U)"),
            "{md}"
        );
    }

    #[test]
    fn deterministic_no_change_says_so() {
        let t = test_def("lower");
        let o = Outcome::NoChange {
            before: 3064.0,
            after: 3064.0,
            p_value: 1.0,
            min_detectable: 0.0,
        };
        let (text, md, _) = render(&t, &o, true);
        assert!(text.contains("at the new end (exact)"), "{text}");
        assert!(md.contains("(exact)"), "{md}");
        assert!(!text.contains("p = ") && !md.contains("p = "), "{text}{md}");
    }

    #[test]
    fn regressions_and_improvements_take_their_article() {
        // Lower is better: up is a regression, down an improvement.
        assert_eq!(judge_with_article(Direction::Lower, 0.1), "a regression");
        assert_eq!(judge_with_article(Direction::Lower, -0.1), "an improvement");
        assert_eq!(judge_with_article(Direction::Higher, 0.1), "an improvement");
        let t = test_def("higher");
        // A negative metric that went up (-100 -> -90) when higher is better.
        let (text, _, _) = render(
            &t,
            &Outcome::Culprits(vec![culprit(-100.0, -90.0, 1e-3)]),
            false,
        );
        assert!(text.contains("(+10.00 %, an improvement)"), "{text}");
        assert!(!text.contains("a improvement"), "{text}");
    }
}
