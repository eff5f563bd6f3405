//! `perfbisect detect`.

use crate::cli::{DetectArgs, Global};

pub fn detect(_g: &Global, _args: DetectArgs) -> anyhow::Result<()> {
    anyhow::bail!("`detect` is not implemented yet")
}
