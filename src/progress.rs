//! Progress bars on stderr (indicatif), hidden when stderr is not a terminal or when asked.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A set of progress bars that can also print lines without tearing them.
pub struct Progress {
    multi: MultiProgress,
    visible: bool,
}

impl Progress {
    /// Bars are drawn only when `enabled` and stderr is a terminal.
    pub fn new(enabled: bool) -> Progress {
        let visible = enabled && std::io::stderr().is_terminal();
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress {
            multi: MultiProgress::with_draw_target(target),
            visible,
        }
    }

    /// A bar of `len` steps labelled `what` (e.g. "build", "run"), with count and ETA.
    pub fn bar(&self, len: u64, what: &str) -> ProgressBar {
        let bar = self.multi.add(ProgressBar::new(len));
        bar.set_style(
            ProgressStyle::with_template("{prefix:>7} [{bar:30}] {pos}/{len} eta {eta} {wide_msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(what.to_string());
        if self.visible {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        bar
    }

    /// Whether bars are drawn (stderr is a terminal and progress was not turned off). Without
    /// them, long commands print a line per step instead, so a CI log shows they are alive.
    pub fn visible(&self) -> bool {
        self.visible
    }

    /// Print a line above the bars (or plainly to stderr when there are none).
    pub fn println(&self, msg: &str) {
        if self.visible {
            let _ = self.multi.println(msg);
        } else {
            eprintln!("{msg}");
        }
    }
}
