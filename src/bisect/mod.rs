//! Noisy bisection policy: a pure, deterministic state machine that picks the next commit to measure and names the commit(s) that moved a metric.
//!
//! The caller maps a range `A..B` onto positions `0..=m` (0 = the old end, `m` = the new end, the
//! range's first-parent commits oldest first in between) and hands a [`Search`] and a [`Lab`]
//! (the real workspace, or the simulated world of the tests) to [`drive`], the one loop that
//! performs each [`Action`] (build, run, feed the samples back) until [`Action::Done`]. `step`
//! runs [`StepSearch`] through the same loop.
//!
//! Files: `search` (state, hunt, next probe, k-ary build rounds), `ends` (the ends, before
//! any probe), `window` (samples by window of time, the evidence of a decision, drift),
//! `classify` (comparisons and the three-way verdict), `verify` (the direct check and the
//! interleaved re-runs), `culprit` (evidence and the final verdict), `driver` (the loop and the
//! [`Lab`] interface), `step` (the `git bisect run` policy), `sim` and `tests` (the simulated
//! world and the tests).
//!
//! Policy (src/guide/finding.md, "The search, step by step", in more detail):
//! - Both ends first. They must differ (Mann-Whitney U at α *and* the threshold on the medians).
//!   Medians that already show a change, or a p-value below 0.25, earn more runs (doubling the
//!   side with fewer, up to `max_repeats`) before [`Outcome::NoChange`] is said, with the smallest
//!   change those runs could have detected.
//! - A probe is compared with the pooled samples of every commit already classified at the old
//!   level and at the new level of its sub-range. New-like: differs from the old side, not from
//!   the new side, and its median is nearer the new level; old-like mirrors it. Differing from
//!   both at α/10 with at least twice the first runs is a level between two steps: both sub-ranges
//!   are then searched and every step reported. A difference from the near side that is not yet
//!   significant but large (p < 0.25, threshold reached, a quarter of the whole step) is a grey
//!   zone, not "same": otherwise a level between two steps is silently taken for the new one.
//! - Unknown (and grey) probes earn more runs: the doubtful side is topped up to as many samples as
//!   the probe, then the probe doubles, up to `max_repeats` (Pinpoint's adaptive attempts). When
//!   nothing can grow, a probe that differs from one side only goes to the other (it still
//!   bounds a real step); one that differs from neither by the threshold is placed by
//!   significance (differing from one side only: the other side), else by its lean (issue 42:
//!   ending the search there gave up a step the rest of the range could name; a misplaced
//!   probe leaves a parent and culprit that do not differ, which the check says, so a coin
//!   flip never blames an innocent commit). Only a probe that differs by the threshold from
//!   the level it lies nearer ends its sub-range as [`Outcome::Inconclusive`], whose best
//!   guess lists every remaining candidate.
//! - A move is short of the threshold only when its runs show it (the step's 95 % interval,
//!   at least as wide as the search's noise allows, lies short of it), not when its medians
//!   miss it: a step 1.4 times the threshold measures below it in one look of several, and a
//!   search looks at the ends, the parent/culprit pair and the re-runs. While a move is in
//!   doubt it earns more runs; with every run spent, a real one (p < α) the range's way whose
//!   interval reaches the threshold is searched, checked and confirmed as a step, with a note.
//! - Unbuildable probes, probes that give no number, and stored probes that cannot be topped up to
//!   a verdict are stepped around (cargo-bisect-rustc's handling of unknown results); when only
//!   such commits remain between the last old-like and the first new-like commit, all of them are
//!   the culprit's `candidates`, as `git bisect` reports "only skipped commits left to test".
//! - The next probe maximises expected information (entropy of a uniform prior over the remaining
//!   candidates) per unit of cost, where a build costs `build_cost` measurement rounds: commits
//!   with stored samples or a cached build win when they split well enough. Without such hints
//!   this is `git bisect`'s midpoint, ⌈log2 m⌉ probes.
//! - Before reporting, parent and culprit are compared directly (topped up if needed) and then
//!   re-run interleaved ([`Action::Verify`], sized for 90 % power, extended while promising,
//!   round k at α / 2^(k-1); an earlier search's re-runs in the store count as its rounds, so a
//!   second search over the same cache judges them as the first did). A parent and culprit on
//!   one level, or re-runs that do not confirm them, back the sub-range off (issue 42: a probe
//!   misplaced by one unlucky look): first to the bounds placed before the pair, then to the
//!   sub-range's own, each probe placed again on fresh runs, at least twice the first; after
//!   three back-offs, or one that cannot be re-run because it or its parent is
//!   unbuildable, the culprit is only a best guess of an inconclusive outcome.
//! - Runs before surrender (issue 58): where `max_repeats` is spent and a decision's evidence
//!   still straddles the threshold (the ends' interval reaches it, or their runs are too few
//!   to have seen it; a parent/culprit pair or its re-runs whose interval reaches it), the
//!   runs go on doubling up to the budget ([`Search::budget`]): as many runs of each commit
//!   as take the time of one build of it (runs are cheap next to a build), or `--max-runs`.
//!   Ends that differ start the hunt only once their step's interval lies past the threshold
//!   (or the budget is spent), and the first probe's window, which measures the ends again,
//!   sends the search back to them once when over all their runs they no longer do: a range
//!   without a change shows one on a few runs a side now and then, and a hunt started on it
//!   could only end inconclusive. "Inconclusive" then says the runs spent and the runs that
//!   would decide.
//! - Deterministic metrics (flag, or zero spread on both ends over at least two runs each) get one
//!   run per commit and plain threshold comparisons.
//!
//! Decisions are recomputed from the stored samples, so nothing already measured is asked for
//! again, and the same inputs give the same actions.

mod classify;
mod culprit;
mod driver;
mod ends;
mod search;
#[cfg(test)]
mod sim;
mod state;
pub mod step;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_decided;
mod types;
mod verify;
mod window;

pub use classify::{classify, decide};
pub use driver::{drive, Decision, Doing, Driven, Lab, Measured, Placed, Policy};
pub use state::Search;
pub use step::{StepSearch, StepVerdict};
pub use types::{Action, Class, Culprit, Outcome, Params, Stored, MAX_BUDGET};
pub use window::{budget_of, Drift};
