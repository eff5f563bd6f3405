//! Rendering results for terminals, scripts and bug trackers.

pub mod calibration;
pub mod charts;
pub mod compare;
pub mod detect;
pub mod eras;
pub mod export;
pub mod find;
pub mod find_json;
pub mod finding;
pub mod html;
pub mod issue;
pub mod json;
pub mod known;
pub mod md;
pub mod plot;
pub mod provenance;
pub mod run;
pub mod show;
pub mod spark;
pub mod steps;
pub mod triage;
pub mod units;
pub mod why;
