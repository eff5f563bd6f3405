//! `perfbisect step`, for `git bisect run`.

use crate::cli::{Global, StepArgs};

pub fn step(_g: &Global, _args: StepArgs) -> i32 {
    eprintln!("`step` is not implemented yet");
    128
}
