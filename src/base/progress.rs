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
/// changes what the next line says, and the time it counts from.
pub struct Heartbeat {
    beat: Option<Beating>,
}

/// What a heartbeat's next line says: what is in progress, how far the whole is, and since
/// when the thing in progress has been going (the "so far").
struct Said {
    what: String,
    done: String,
    since: Instant,
}

/// A heartbeat's line to say, the sender whose drop stops its thread, and the thread.
type Beating = (
    Arc<Mutex<Said>>,
    mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
);

impl Heartbeat {
    /// A new single thing in progress now, for the next line: its "so far" counts from now
    /// (a pristine rebuild's, not the whole check's, so it agrees with the "done in" said
    /// after it). Nothing (empty) says no line until set again.
    pub fn set(&self, what: impl Into<String>) {
        if let Some((w, _, _)) = &self.beat {
            let mut said = w.lock().unwrap_or_else(|e| e.into_inner());
            *said = Said {
                what: what.into(),
                done: String::new(),
                since: Instant::now(),
            };
        }
    }

    /// What is in progress now (several things of one whole, e.g. the builds still going),
    /// and how far the whole is ("24 of 46 done"), said after the time the whole has taken:
    /// the "so far" keeps counting from when the heartbeat began.
    pub fn set_done(&self, what: impl Into<String>, done: impl Into<String>) {
        if let Some((w, _, _)) = &self.beat {
            let mut said = w.lock().unwrap_or_else(|e| e.into_inner());
            said.what = what.into();
            said.done = done.into();
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
        let what = Arc::new(Mutex::new(Said {
            what: what.into(),
            done: String::new(),
            since: Instant::now(),
        }));
        let (stop, stopped) = mpsc::channel::<()>();
        let said = Arc::clone(&what);
        let every = interval();
        let thread = std::thread::spawn(move || {
            // Ends when the sender is dropped (recv sees it disconnected).
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                // Held while the line is written: what a caller says after it changed what is
                // in progress (a build that finished) never comes before a line that still
                // names the old.
                // Nothing in progress (all done while the caller waits on more): no line.
                let now = said.lock().unwrap_or_else(|e| e.into_inner());
                if !now.what.is_empty() {
                    eprintln!("{}", line(&now.what, &now.done, now.since.elapsed()));
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
            hb.beat.as_ref().unwrap().0.lock().unwrap().what,
            "building 3a4b5c6d7e"
        );
        let t = Instant::now();
        drop(hb);
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the thread ends at once"
        );
    }

    /// What the next line would say: its text, with the time so far as the thread would read
    /// it now.
    fn next_line(hb: &Heartbeat) -> String {
        let said = hb.beat.as_ref().unwrap().0.lock().unwrap();
        line(&said.what, &said.done, said.since.elapsed())
    }

    #[test]
    fn a_new_single_thing_counts_its_own_time_and_a_list_the_whole() {
        let p = Progress::new(false, false);
        let hb = p.heartbeat("checking builds against pristine ones");
        // The check has been going a while when one rebuild starts.
        hb.beat.as_ref().unwrap().0.lock().unwrap().since -= Duration::from_secs(40);
        assert_eq!(
            next_line(&hb),
            "perfbisect: still checking builds against pristine ones (40s so far)"
        );
        hb.set("rebuilding 3a4b5c6d7e in a clean worktree");
        assert_eq!(
            next_line(&hb),
            "perfbisect: still rebuilding 3a4b5c6d7e in a clean worktree (0s so far)",
            "the rebuild's own time, as its \"done in\" will count it"
        );
        // A list of builds, counting the whole: the clock runs on.
        hb.beat.as_ref().unwrap().0.lock().unwrap().since -= Duration::from_secs(40);
        hb.set_done("building c0, c1", "24 of 46 done");
        assert_eq!(
            next_line(&hb),
            "perfbisect: still building c0, c1 (40s so far); 24 of 46 done"
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
