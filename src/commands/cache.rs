//! `perfbisect cache ls | gc [--max-size SIZE] | rm REV | prune`.

use bytesize::ByteSize;

use crate::cli::{CacheAction, CacheArgs, Format, Global};
use crate::error::UsageError;
use crate::jobs::upkeep;
use crate::pipeline::workspace::Workspace;

use super::common::{locations, verbosity};

pub fn cache(g: &Global, args: CacheArgs) -> anyhow::Result<()> {
    let write = !matches!(args.action, CacheAction::Ls { .. });
    let ws = Workspace::open(&locations(g), verbosity(g), write)?;
    let subject = |name: &str| -> String {
        name.get(..40)
            .and_then(|h| gix::ObjectId::from_hex(h.as_bytes()).ok())
            .and_then(|id| ws.repo.info(id).ok())
            .map(|i| i.subject)
            .unwrap_or_default()
    };
    match args.action {
        CacheAction::Ls {
            format: Format::Json,
        } => print!("{}", upkeep::ls_json(&ws, &subject)?),
        CacheAction::Ls { .. } => print!("{}", upkeep::ls(&ws, &subject)),
        CacheAction::Gc { max_size } => {
            let max = max_size
                .map(|m| {
                    m.parse::<ByteSize>().map_err(|e| {
                        UsageError::err(format!("--max-size `{m}`: {e} (use e.g. 500M or 10G)"))
                    })
                })
                .transpose()?;
            let temps = [super::merge::TEMP_PREFIX];
            print!("{}", upkeep::gc(&ws, max.map(|m| m.as_u64()), &temps)?);
        }
        CacheAction::Rm { rev } => {
            let id = ws.repo.resolve(&rev)?;
            println!("{}", upkeep::rm(&ws, id)?);
        }
        CacheAction::Prune => print!("{}", upkeep::prune(&ws)?),
    }
    Ok(())
}
