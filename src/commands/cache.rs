//! `perfbisect cache ls | gc | rm`.

use crate::cli::{CacheArgs, Global};

pub fn cache(_g: &Global, _args: CacheArgs) -> anyhow::Result<()> {
    anyhow::bail!("`cache` is not implemented yet")
}
