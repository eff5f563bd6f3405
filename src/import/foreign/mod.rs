//! Other tools' histories as perfbisect's rows (`import --from TOOL`): a github-action-benchmark
//! `data.js`, an asv `results/` directory, pytest-benchmark's saved runs, and the outputs of
//! BMF and hyperfine that name no commit. Each reader streams the *points* of its *foreign
//! series* (one number, or one measurement's raw samples, of one benchmark on one commit,
//! with its round, time, machine, unit and spread) to a [`Visit`]: the importer, which
//! takes each series a test of the config takes into that test's rows ([`take`]), or the
//! lister of `--list` ([`list`]).
//!
//! One series is one configuration: a reader never mixes machines, asv environments or
//! benchmark-action suites that hold the same benchmarks; `--machine`, `--env` and `--suite`
//! select, and a history that holds several with none selected is refused, listing them
//! ([`select`]).

mod action;
mod asv;
mod commitless;
mod dispatch;
mod history;
pub mod list;
pub mod names;
mod point;
mod pytest;
mod take;

pub use list::Listing;
pub use point::{Options, Tool};
pub use take::{import, Taken};
