//! What a pass of `run` built, measured and stored, counted on from the passes before it (the
//! [`Summary`] is a type of `report/`, which renders it).

use std::time::{Duration, Instant};

use crate::pipeline::workspace::Workspace;
use crate::report::run::{Shared, Summary, Time};

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
