//! What a pass of `run` built, measured and stored, counted on from the passes before it, and
//! the summary `run` prints of it.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::git;
use crate::pipeline::workspace::Workspace;

/// What the passes of one `run` did before this one (a pass whose steps stood on a stale
/// incremental build is measured again in another), from the command's start.
#[derive(Debug)]
pub struct Spent {
    pub(super) started: Instant,
    builds: usize,
    checks: usize,
    runs: usize,
    failed_runs: usize,
    building: Duration,
    checking: Duration,
    measuring: Duration,
}

impl Spent {
    /// Nothing done yet; the clock started at `started` (the command's start).
    pub fn new(started: Instant) -> Spent {
        Spent {
            started,
            builds: 0,
            checks: 0,
            runs: 0,
            failed_runs: 0,
            building: Duration::ZERO,
            checking: Duration::ZERO,
            measuring: Duration::ZERO,
        }
    }

    /// What `s` counted, for the next pass to count on from.
    pub(super) fn carry_over(&mut self, s: &Summary) {
        self.builds = s.builds;
        self.checks = s.pristine_checks;
        self.runs = s.runs;
        self.failed_runs = s.failed_runs;
        self.building = s.building;
        self.checking = s.checking;
        self.measuring = s.measuring;
    }
}

/// Where the wall time of a `run` went: the parts and the rest add up to the total.
#[derive(Debug, Default, Serialize)]
struct Time {
    total_s: f64,
    building_s: f64,
    /// Pristine rebuilds of the builds the steps stand on.
    checking_s: f64,
    measuring_s: f64,
    /// The rest: loading samples, waiting for the lock, planning.
    waiting_s: f64,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    /// Builds performed, pristine checks included.
    pub(super) builds: usize,
    /// Of `builds`, the pristine rebuilds that checked the builds a step stands on.
    pristine_checks: usize,
    pub(super) cache_hits: usize,
    pub(super) runs: usize,
    pub(super) failed_builds: Vec<String>,
    pub(super) failed_runs: usize,
    /// Runs not made because a commit's build is byte-identical to that of a commit whose
    /// samples it shares.
    runs_saved: usize,
    /// Of `runs`, those measured beside steps too few runs left undecided, until decided.
    pub(super) topped_up: usize,
    /// Commits (of this invocation) whose samples come from an identical build, with it.
    identical_builds: Vec<Shared>,
    /// With `--build-only`: nothing was measured, by request.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    build_only: bool,
    /// `I/N` with `--shard`, and how many commits of the range that shard holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<String>,
    commits: usize,
    /// Why each of `failed_builds` failed (the first line of its record), for the text output.
    #[serde(skip)]
    failed_reasons: Vec<String>,
    /// How the runs were taken: interleaved rounds across the commits, what that cost, and
    /// how much the machine's speed moved between rounds. `null` when nothing was measured
    /// or `[measure] interleave = false`.
    pub(super) interleaved: Option<Interleaved>,
    /// Where the wall time went (filled in when the summary is printed).
    time: Time,
    #[serde(skip)]
    pub(super) building: Duration,
    #[serde(skip)]
    checking: Duration,
    #[serde(skip)]
    pub(super) measuring: Duration,
}

impl Summary {
    /// A pass's summary of `commits` commits (of shard `shard`), counted on from the passes
    /// before it (`spent`).
    pub(super) fn counted_on(
        spent: &Spent,
        build_only: bool,
        shard: Option<(usize, usize)>,
        commits: usize,
    ) -> Summary {
        Summary {
            builds: spent.builds,
            pristine_checks: spent.checks,
            cache_hits: 0,
            runs: spent.runs,
            failed_builds: Vec::new(),
            failed_runs: spent.failed_runs,
            runs_saved: 0,
            topped_up: 0,
            identical_builds: Vec::new(),
            build_only,
            shard: shard.map(|(i, n)| format!("{i}/{n}")),
            commits,
            failed_reasons: Vec::new(),
            interleaved: None,
            time: Time::default(),
            building: spent.building,
            checking: spent.checking,
            measuring: spent.measuring,
        }
    }

    /// Builds performed (pristine checks included) and runs stored.
    pub fn counts(&self) -> (usize, usize) {
        (self.builds, self.runs)
    }

    /// The summary as printed now: its time split, from the command's start.
    pub(super) fn timed(&mut self, started: Instant) -> Duration {
        let total = started.elapsed();
        let secs = |d: Duration| d.as_secs_f64();
        self.time = Time {
            total_s: secs(total),
            building_s: secs(self.building),
            checking_s: secs(self.checking),
            measuring_s: secs(self.measuring),
            waiting_s: secs(total.saturating_sub(self.building + self.checking + self.measuring)),
        };
        total
    }

    /// Add what a pristine check rebuilt and cost.
    pub(super) fn checked(&mut self, c: &crate::pipeline::pristine::Checked) {
        self.builds += c.builds;
        self.pristine_checks += c.builds;
        self.checking += Duration::from_secs_f64(c.seconds);
    }

    /// Commit `id`'s build failed, its record ending with `tail`.
    pub(super) fn failed_build(&mut self, id: &gix::ObjectId, tail: &str) {
        self.failed_builds.push(id.to_string());
        self.failed_reasons
            .push(tail.lines().next().unwrap_or("").trim().to_string());
    }
}

/// `run`'s interleaved rounds.
#[derive(Debug, Default, Serialize)]
pub(super) struct Interleaved {
    /// The most rounds of any test (group) measured.
    pub(super) rounds: usize,
    /// Setups and warm-up runs made beyond one per commit and test: what measuring round by
    /// round cost against running each commit's runs back to back.
    pub(super) extra_setups: usize,
    pub(super) extra_warmups: usize,
    /// The largest move of the machine between rounds, over the tests.
    pub(super) drift: Option<crate::stats::drift::RoundDrift>,
}

impl Interleaved {
    /// "this machine's speed moved 1.23 % between rounds (p = 7.9e-3); ...", when it did: by
    /// more than the runs' own noise (p < 0.01) and than the note's precision
    /// ([`crate::stats::drift::SAID_FROM`]). Counts (instructions, deterministic values) have
    /// no drift here: the machine's speed does not move them.
    pub(super) fn drift_note(&self) -> Option<String> {
        let d = self
            .drift
            .filter(|d| d.p_value < 0.01 && d.rel.abs() >= crate::stats::drift::SAID_FROM)?;
        Some(format!(
            "this machine's speed moved {} % between rounds (p = {:.1e}); measured round by round, the drift fell on every commit alike",
            crate::base::text::fmt_num(d.rel * 100.0),
            d.p_value
        ))
    }
}

/// A commit whose build is byte-identical to another's, so it uses that one's samples.
#[derive(Debug, Serialize)]
struct Shared {
    commit: String,
    same_as: String,
    test: String,
    runs_saved: usize,
}

/// A commit whose build is byte-identical to `same_as` (full hash), whose samples of `test`
/// stand in for `saved` of its runs: counted in the summary (and said with `-v`).
pub(super) fn note_shared(
    ws: &Workspace,
    summary: &mut Summary,
    c: &crate::git::CommitInfo,
    test: &crate::config::Test,
    same_as: String,
    saved: usize,
) {
    if ws.verbosity.verbose > 0 {
        ws.note(&format!(
            "{} {}: same build as {} (byte-identical artifacts): its samples of `{}` are used, {saved} run{} saved",
            c.short(),
            c.subject,
            same_as.get(..10).unwrap_or(""),
            test.name,
            if saved == 1 { "" } else { "s" }
        ));
    }
    summary.runs_saved += saved;
    summary.identical_builds.push(Shared {
        commit: c.id.to_string(),
        same_as,
        test: test.name.clone(),
        runs_saved: saved,
    });
}

/// The summary of a pass as `run` prints it: one JSON line, or the text.
pub fn print_summary(
    ws: &Workspace,
    s: &Summary,
    json: bool,
    elapsed: Duration,
) -> anyhow::Result<()> {
    match json {
        true => println!("{}", crate::report::json::json_line(s)?),
        false => {
            let t = &s.time;
            let mut parts = vec![format!(
                "building {}",
                crate::base::text::fmt_secs(t.building_s)
            )];
            if s.pristine_checks > 0 {
                parts.push(format!(
                    "checking builds {}",
                    crate::base::text::fmt_secs(t.checking_s)
                ));
            }
            parts.push(format!(
                "measuring {}",
                crate::base::text::fmt_secs(t.measuring_s)
            ));
            parts.push(format!(
                "other {}",
                crate::base::text::fmt_secs(t.waiting_s)
            ));
            println!(
                "{} built{}, {} cached, {} build{} failed, {} run{} ({} failed) in {}; {}",
                s.builds,
                match s.pristine_checks {
                    0 => String::new(),
                    1 => " (1 of them a pristine check)".to_string(),
                    n => format!(" ({n} of them pristine checks)"),
                },
                s.cache_hits,
                s.failed_builds.len(),
                if s.failed_builds.len() == 1 { "" } else { "s" },
                s.runs,
                if s.runs == 1 { "" } else { "s" },
                s.failed_runs,
                crate::base::text::fmt_secs(elapsed.as_secs_f64()),
                parts.join(", ")
            );
            if s.topped_up > 0 {
                println!(
                    "  {} of the runs measured the builds beside steps too few runs left undecided, until decided (or max_repeats)",
                    s.topped_up
                );
            }
            if s.build_only {
                println!(
                    "  built only (--build-only): nothing measured; `merge` brings the builds to the machine that measures"
                );
            }
            if s.runs_saved > 0 {
                let mut commits: Vec<&str> = s
                    .identical_builds
                    .iter()
                    .map(|b| b.commit.as_str())
                    .collect();
                commits.sort();
                commits.dedup();
                println!(
                    "  {} commit{} built byte-identical artifacts to measured ones and reused their samples: {} run{} saved",
                    commits.len(),
                    if commits.len() == 1 { "" } else { "s" },
                    s.runs_saved,
                    if s.runs_saved == 1 { "" } else { "s" }
                );
            }
            if let Some(i) = &s.interleaved {
                let mut extra = Vec::new();
                if i.extra_setups > 0 {
                    extra.push(format!("{} more setups", i.extra_setups));
                }
                if i.extra_warmups > 0 {
                    extra.push(format!("{} more warm-up runs", i.extra_warmups));
                }
                println!(
                    "  measured round by round: {} interleaved round{} across the commits{}",
                    i.rounds,
                    if i.rounds == 1 { "" } else { "s" },
                    if extra.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (interleaving cost {} than running each commit's runs back to back)",
                            extra.join(" and ")
                        )
                    }
                );
                if let Some(line) = i.drift_note() {
                    println!("  {line}");
                }
            }
            for (f, why) in s.failed_builds.iter().zip(&s.failed_reasons) {
                let id = gix::ObjectId::from_hex(f.as_bytes())?;
                let subject = ws.repo.info(id).map(|i| i.subject).unwrap_or_default();
                println!("  build failed: {} {subject} ({why})", git::short(&id));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Interleaved;
    use crate::stats::drift::RoundDrift;

    fn with(rel: f64, p_value: f64) -> Interleaved {
        Interleaved {
            rounds: 5,
            drift: Some(RoundDrift {
                rel,
                rounds: 5,
                p_value,
            }),
            ..Interleaved::default()
        }
    }

    /// Issue 50: "this machine's speed moved 0.00001435 % between rounds (p = 7.9e-3)" was
    /// said of an instruction count's rounds.
    #[test]
    fn a_drift_is_said_only_when_it_reads_as_one() {
        assert_eq!(
            with(0.0123, 7.9e-3).drift_note().as_deref(),
            Some(
                "this machine's speed moved 1.23 % between rounds (p = 7.9e-3); measured round \
                 by round, the drift fell on every commit alike"
            )
        );
        // Below the note's precision: nothing to say, however sure.
        assert_eq!(with(1.435e-7, 7.9e-3).drift_note(), None);
        assert_eq!(with(0.00009, 1e-9).drift_note(), None);
        // Within the noise: nothing either.
        assert_eq!(with(0.05, 0.2).drift_note(), None);
        // No drift measured (a count's rounds are not looked at): nothing.
        assert_eq!(Interleaved::default().drift_note(), None);
    }
}
