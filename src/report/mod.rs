//! Rendering results for terminals, scripts and bug trackers.

pub mod calibration;
pub mod charts;
pub mod compare;
pub mod export;
pub mod find;
pub mod find_json;
pub mod html;
pub mod issue;
pub mod md;
pub mod plot;
pub mod show;
pub mod spark;
pub mod text;
pub mod triage;
pub mod units;
pub mod why;

pub use text::{fmt_num, fmt_p, fmt_signed, json_line, json_pretty, JSON_SCHEMA};
