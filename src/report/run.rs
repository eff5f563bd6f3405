//! What a pass of `run` built, measured and stored (the [`Summary`] `jobs::run` counts), and
//! how `run` says it: one JSON line, or the text.

use std::time::Duration;

use serde::Serialize;

/// What a pass of `run` did: its builds, runs and where its time went.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Builds performed, pristine checks included.
    pub(crate) builds: usize,
    /// Of `builds`, the pristine rebuilds that checked the builds a step stands on.
    pub(crate) pristine_checks: usize,
    pub(crate) cache_hits: usize,
    pub(crate) runs: usize,
    pub(crate) failed_builds: Vec<String>,
    pub(crate) failed_runs: usize,
    /// Runs not made because a commit's build is byte-identical to that of a commit whose
    /// samples it shares.
    pub(crate) runs_saved: usize,
    /// Of `runs`, those measured beside steps too few runs left undecided, until decided.
    pub(crate) topped_up: usize,
    /// Commits (of this invocation) whose samples come from an identical build, with it.
    pub(crate) identical_builds: Vec<Shared>,
    /// With `--build-only`: nothing was measured, by request.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) build_only: bool,
    /// `I/N` with `--shard`, and how many commits of the range that shard holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shard: Option<String>,
    pub(crate) commits: usize,
    /// Why each of `failed_builds` failed (the first line of its record), for the text output.
    #[serde(skip)]
    pub(crate) failed_reasons: Vec<String>,
    /// How the runs were taken: interleaved rounds across the commits, what that cost, and
    /// how much the machine's speed moved between rounds. `null` when nothing was measured
    /// or `[measure] interleave = false`.
    pub(crate) interleaved: Option<Interleaved>,
    /// Where the wall time went (filled in when the summary is printed).
    pub(crate) time: Time,
    #[serde(skip)]
    pub(crate) building: Duration,
    #[serde(skip)]
    pub(crate) checking: Duration,
    #[serde(skip)]
    pub(crate) measuring: Duration,
}

impl Summary {
    /// Builds performed (pristine checks included) and runs stored.
    pub fn counts(&self) -> (usize, usize) {
        (self.builds, self.runs)
    }
}

/// Where the wall time of a `run` went: the parts and the rest add up to the total.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Time {
    pub(crate) total_s: f64,
    pub(crate) building_s: f64,
    /// Pristine rebuilds of the builds the steps stand on.
    pub(crate) checking_s: f64,
    pub(crate) measuring_s: f64,
    /// The rest: loading samples, waiting for the lock, planning.
    pub(crate) waiting_s: f64,
}

/// `run`'s interleaved rounds.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Interleaved {
    /// The most rounds of any test (group) measured.
    pub(crate) rounds: usize,
    /// Setups and warm-up runs made beyond one per commit and test: what measuring round by
    /// round cost against running each commit's runs back to back.
    pub(crate) extra_setups: usize,
    pub(crate) extra_warmups: usize,
    /// The largest move of the machine between rounds, over the tests.
    pub(crate) drift: Option<crate::stats::drift::RoundDrift>,
}

impl Interleaved {
    /// "this machine's speed moved 1.23 % between rounds (p = 7.9e-3); ...", when it did: by
    /// more than the runs' own noise (p < 0.01) and than the note's precision
    /// ([`crate::stats::drift::SAID_FROM`]). Counts (instructions, deterministic values) have
    /// no drift here: the machine's speed does not move them.
    pub(crate) fn drift_note(&self) -> Option<String> {
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
pub(crate) struct Shared {
    pub(crate) commit: String,
    pub(crate) same_as: String,
    pub(crate) test: String,
    pub(crate) runs_saved: usize,
}

/// The summary of a pass as `run` prints it: one JSON line, or the text (`elapsed` since
/// the command's start; `subject` names a failed build's commit by its full hash).
pub fn text(
    s: &Summary,
    json: bool,
    elapsed: Duration,
    subject: &dyn Fn(&gix::ObjectId) -> String,
) -> anyhow::Result<String> {
    use std::fmt::Write as _;
    let mut o = String::new();
    match json {
        true => writeln!(o, "{}", crate::report::json::json_line(s)?)?,
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
            writeln!(
                o,
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
            )?;
            if s.topped_up > 0 {
                writeln!(
                    o,
                    "  {} of the runs measured the builds beside steps too few runs left undecided, until decided (or max_repeats)",
                    s.topped_up
                )?;
            }
            if s.build_only {
                writeln!(
                    o,
                    "  built only (--build-only): nothing measured; `merge` brings the builds to the machine that measures"
                )?;
            }
            if s.runs_saved > 0 {
                let mut commits: Vec<&str> = s
                    .identical_builds
                    .iter()
                    .map(|b| b.commit.as_str())
                    .collect();
                commits.sort();
                commits.dedup();
                writeln!(
                    o,
                    "  {} commit{} built byte-identical artifacts to measured ones and reused their samples: {} run{} saved",
                    commits.len(),
                    if commits.len() == 1 { "" } else { "s" },
                    s.runs_saved,
                    if s.runs_saved == 1 { "" } else { "s" }
                )?;
            }
            if let Some(i) = &s.interleaved {
                let mut extra = Vec::new();
                if i.extra_setups > 0 {
                    extra.push(format!("{} more setups", i.extra_setups));
                }
                if i.extra_warmups > 0 {
                    extra.push(format!("{} more warm-up runs", i.extra_warmups));
                }
                writeln!(
                    o,
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
                )?;
                if let Some(line) = i.drift_note() {
                    writeln!(o, "  {line}")?;
                }
            }
            for (f, why) in s.failed_builds.iter().zip(&s.failed_reasons) {
                let id = gix::ObjectId::from_hex(f.as_bytes())?;
                writeln!(
                    o,
                    "  build failed: {} {} ({why})",
                    crate::git::short(&id),
                    subject(&id)
                )?;
            }
        }
    }
    Ok(o)
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
