//! What a command does over time, each job on the workspace and its stages: `run` over a
//! range ([`run`]), the search of `find` and `report` on the real lab ([`find`]), the nightly
//! sheriff ([`triage`]), `compare`'s before/after ([`compare`]), `calibrate`'s A/A runs
//! ([`calibrate`]), and the care of the cache ([`upkeep`]).

pub mod calibrate;
pub mod compare;
pub mod find;
pub mod run;
pub mod triage;
pub mod upkeep;
