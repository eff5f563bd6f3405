//! `perfbisect compare`.

use crate::cli::{CompareArgs, Global};

pub fn compare(_g: &Global, _args: CompareArgs) -> anyhow::Result<()> {
    anyhow::bail!("`compare` is not implemented yet")
}
