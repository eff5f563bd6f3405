//! Where a finding goes once rendered: a file with its plot ([`files`]), a comment on a
//! GitHub issue through `gh` ([`attach`]), the static HTML site ([`site`]).

pub mod attach;
pub mod files;
pub mod site;
