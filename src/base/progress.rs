//! Progress bars on stderr (indicatif), hidden when stderr is not a terminal or when asked;
//! without them, a heartbeat line during a long step (a build, a run, a profile), so stderr is
//! never silent for long.

use std::io::IsTerminal;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Seconds between heartbeat lines; tests set a short one.
const HEARTBEAT_VAR: &str = "PERFBISECT_HEARTBEAT_SECS";
/// The default: a CI log shows the command is alive well within half a minute.
const HEARTBEAT: Duration = Duration::from_secs(20);

/// A set of progress bars that can also print lines without tearing them.
pub struct Progress {
    multi: MultiProgress,
    visible: bool,
    /// `-q`: no heartbeat lines either.
    quiet: bool,
}

/// Names a heartbeat line lists at most; the rest are counted ("+3 more"), so the line never
/// runs on over several.
const LISTED: usize = 3;

/// While it lives, a line on stderr every [`HEARTBEAT`] ("perfbisect: still building
/// 3a4b5c6d7e, 9f8e7d6c5b (+3 more) (40s so far); 24 of 46 done") saying what is in progress,
/// and only that, on one line; inert when bars are drawn or with `-q`. [`Heartbeat::set`]
/// changes what the next line says.
pub struct Heartbeat {
    beat: Option<Beating>,
}

/// A heartbeat's line to say (what is in progress, and how far the whole is), the sender whose
/// drop stops its thread, and the thread.
type Beating = (
    Arc<Mutex<(String, String)>>,
    mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
);

impl Heartbeat {
    /// What is in progress now, for the next line; nothing (empty) says no line until set
    /// again.
    pub fn set(&self, what: impl Into<String>) {
        self.set_done(what, "");
    }

    /// What is in progress now, and how far the whole is ("24 of 46 done"), said after the
    /// time it has taken.
    pub fn set_done(&self, what: impl Into<String>, done: impl Into<String>) {
        if let Some((w, _, _)) = &self.beat {
            *w.lock().unwrap_or_else(|e| e.into_inner()) = (what.into(), done.into());
        }
    }
}

/// `names` for a heartbeat line: the first [`LISTED`] of them, then how many more ("a, b, c
/// (+3 more)").
pub fn listed(names: &[impl AsRef<str>]) -> String {
    let shown: Vec<&str> = names.iter().take(LISTED).map(AsRef::as_ref).collect();
    let mut text = shown.join(", ");
    if names.len() > LISTED {
        text.push_str(&format!(" (+{} more)", names.len() - LISTED));
    }
    text
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        if let Some((_, stop, thread)) = self.beat.take() {
            drop(stop);
            let _ = thread.join();
        }
    }
}

/// The heartbeat's interval: [`HEARTBEAT_VAR`] (seconds) when set to a positive number.
fn interval() -> Duration {
    std::env::var(HEARTBEAT_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(HEARTBEAT, Duration::from_secs_f64)
}

/// One heartbeat line: what is in progress (its first line only), the time so far, and how
/// far the whole is.
fn line(what: &str, done: &str, elapsed: Duration) -> String {
    let what = what.lines().next().unwrap_or("");
    let so_far = humantime::format_duration(Duration::from_secs(elapsed.as_secs()));
    let done = done.lines().next().unwrap_or("");
    if done.is_empty() {
        format!("perfbisect: still {what} ({so_far} so far)")
    } else {
        format!("perfbisect: still {what} ({so_far} so far); {done}")
    }
}

impl Progress {
    /// Bars are drawn only when `enabled` and stderr is a terminal; `quiet` (`-q`) silences
    /// the heartbeat.
    pub fn new(enabled: bool, quiet: bool) -> Progress {
        let visible = enabled && std::io::stderr().is_terminal();
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress {
            multi: MultiProgress::with_draw_target(target),
            visible,
            quiet,
        }
    }

    /// A [`Heartbeat`] saying `what` is in progress ("building 3a4b5c6d7e"), when no bars are
    /// drawn and not `-q`.
    pub fn heartbeat(&self, what: impl Into<String>) -> Heartbeat {
        if self.visible || self.quiet {
            return Heartbeat { beat: None };
        }
        let what = Arc::new(Mutex::new((what.into(), String::new())));
        let (stop, stopped) = mpsc::channel::<()>();
        let said = Arc::clone(&what);
        let every = interval();
        let start = Instant::now();
        let thread = std::thread::spawn(move || {
            // Ends when the sender is dropped (recv sees it disconnected).
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                // Held while the line is written: what a caller says after it changed what is
                // in progress (a build that finished) never comes before a line that still
                // names the old.
                // Nothing in progress (all done while the caller waits on more): no line.
                let now = said.lock().unwrap_or_else(|e| e.into_inner());
                if !now.0.is_empty() {
                    eprintln!("{}", line(&now.0, &now.1, start.elapsed()));
                }
            }
        });
        Heartbeat {
            beat: Some((what, stop, thread)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heartbeat_is_inert_when_quiet_and_stops_when_dropped() {
        let p = Progress::new(false, true);
        let hb = p.heartbeat("building");
        assert!(hb.beat.is_none());
        let p = Progress::new(false, false);
        let hb = p.heartbeat("building");
        hb.set("building 3a4b5c6d7e");
        assert_eq!(
            hb.beat.as_ref().unwrap().0.lock().unwrap().0,
            "building 3a4b5c6d7e"
        );
        let t = Instant::now();
        drop(hb);
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the thread ends at once"
        );
    }

    #[test]
    fn a_heartbeat_line_is_one_line_of_a_few_names() {
        let names: Vec<String> = (0..6).map(|i| format!("c{i}")).collect();
        assert_eq!(listed(&names[..2]), "c0, c1");
        assert_eq!(listed(&names[..3]), "c0, c1, c2");
        assert_eq!(listed(&names), "c0, c1, c2 (+3 more)");
        let what = format!("building {}", listed(&names));
        assert_eq!(
            line(&what, "24 of 46 done", Duration::from_millis(40_500)),
            "perfbisect: still building c0, c1, c2 (+3 more) (40s so far); 24 of 46 done"
        );
        assert_eq!(
            line("building c0\nand more", "", Duration::from_secs(2)),
            "perfbisect: still building c0 (2s so far)"
        );
    }
}
