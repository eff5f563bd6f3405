//! `perfbisect calibrate`.

use crate::cli::{CalibrateArgs, Global};

pub fn calibrate(_g: &Global, _args: CalibrateArgs) -> anyhow::Result<()> {
    anyhow::bail!("`calibrate` is not implemented yet")
}
