//! `perfbisect find`.

use crate::cli::{FindArgs, Global};

pub fn find(_g: &Global, _args: FindArgs) -> anyhow::Result<()> {
    anyhow::bail!("`find` is not implemented yet")
}
