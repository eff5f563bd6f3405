//! The workspace every command works in and the stages its data goes through, in the order
//! it flows: the [`workspace::Workspace`] (repository, config, cache and lock; loading
//! samples, building what is missing, measuring and storing, each a file of `workspace/`), the samples of a test
//! ([`samples`]), the pristine check of the builds a verdict stands on ([`pristine`]), a
//! test's history as rows and change points ([`history`]), what an issue about a search
//! stands on ([`issue`]), the profile of a culprit
//! ([`profile`]), what a measurement depends on besides the commit ([`fingerprint`]) and the
//! eras a change of it makes ([`eras`]), measuring across the machines of a CI matrix
//! ([`shards`]), and what the HTML site shows ([`site`]).

pub mod eras;
pub mod fingerprint;
pub mod history;
pub mod issue;
pub mod pristine;
pub mod profile;
pub mod rows;
pub mod samples;
pub mod shards;
pub mod site;
pub mod workspace;
