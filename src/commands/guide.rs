//! `perfbisect guide [PAGE]`: the guide built into the binary, a page printed as it is in
//! src/guide/, or the list of pages.

use std::io::Write as _;

use anyhow::Context as _;

/// Print `page`, or list the pages when there is none.
pub fn guide(page: Option<&str>) -> anyhow::Result<()> {
    let text = match page {
        None => {
            let width = crate::guide::PAGES
                .iter()
                .map(|p| p.name.len())
                .max()
                .unwrap_or(0);
            let mut o = String::from("The guide's pages (`perfbisect guide PAGE` prints one):\n\n");
            for p in crate::guide::PAGES {
                o += &format!("  {:width$}  {}\n", p.name, p.about);
            }
            o += "\nStart with `perfbisect guide first-search`. The same pages are src/guide/*.md in \
                  the repository, and `perfbisect man --dir DIR` writes them as manual pages.\n";
            o
        }
        Some(name) => match crate::guide::page(name) {
            Some(p) => p.text.to_string(),
            None => crate::usage!(
                "no guide page `{name}`{}; `perfbisect guide` lists them",
                crate::error::did_you_mean(name, crate::guide::PAGES.iter().map(|p| p.name))
            ),
        },
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // `perfbisect guide noise | head` closes the pipe early: not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("cannot write to stdout"),
    }
}
