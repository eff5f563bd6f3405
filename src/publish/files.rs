//! A report as a file: Markdown or JSON saved with its plot (into `--out` or a new folder
//! under `CACHE/reports/`) and posted from there to an issue with `gh`. The report modules
//! render; this writes what they render.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::publish::attach::Target;

use crate::report::plot::{self, Chart};

/// Write a report as `name` into `out` (default: a new folder `TIME-TEST/` in `reports`, the
/// cache's `reports/`),
/// with the plot (when `plot` names one) beside it under that file name and referenced by
/// it; `render` makes the report from the plot's relative path. Returns the report's path.
pub fn save_markdown(
    reports: &Path,
    out: Option<&Path>,
    test: &str,
    name: &str,
    plot: Option<&Path>,
    chart: &Chart,
    render: &dyn Fn(Option<String>) -> anyhow::Result<String>,
) -> anyhow::Result<PathBuf> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let (y, mo, d, h, mi, s) = crate::base::text::civil(now as i64);
            reports.join(format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}-{test}"))
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let plot_ref = match plot {
        Some(p) => {
            let file = p
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| format!("{test}.png"));
            plot::write(chart, &dir.join(&file))?;
            Some(file)
        }
        None => None,
    };
    let path = dir.join(name);
    plot::write_file(&path, render(plot_ref)?.as_bytes())?;
    Ok(path)
}

/// Post the Markdown file `saved` to `target` and print the comment's URL (and `note` where
/// the report is saved); on failure the error names gh's message and where the Markdown is.
pub fn post(target: &Target, saved: &Path, note: &dyn Fn(&str)) -> anyhow::Result<()> {
    match crate::publish::attach::post(target, saved) {
        Ok(url) => {
            println!("{url}");
            note(&format!(
                "posted to {target}; the report is also saved as {}",
                crate::base::paths::display_path(saved)
            ));
            Ok(())
        }
        Err(e) => Err(e.context(format!(
            "cannot post the report to {target}; it is saved as {}",
            crate::base::paths::display_path(saved)
        ))),
    }
}
