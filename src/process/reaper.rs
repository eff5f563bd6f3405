//! What a command leaves running outside its process group: finding it, killing it, and
//! reaping the orphans perfbisect adopts as a child subreaper.
//!
//! A command's descendants can leave its process group (`setsid`, a shell's job control), so
//! `killpg` misses them, and one that still holds the output pipe keeps the reader waiting
//! long past the timeout. As a subreaper (`PR_SET_CHILD_SUBREAPER`) perfbisect adopts every
//! orphaned descendant of the commands it runs, instead of init: once a command has been
//! reaped, whatever it left running is a child of perfbisect's or below one, and `waitid`
//! says at no cost whether there is any. Each command carries an id in its environment
//! ([`MARK_VAR`]), which its descendants inherit, so an adopted orphan is traced to the
//! command it came from even while others run beside it (builds in parallel, `setup`
//! servers that must live on).
//!
//! Adopted orphans have to be reaped here, or they stay zombies (and a teardown that waits
//! for `kill -0 $server` to fail waits forever). Only orphans are: the commands
//! `process` spawns are registered ([`spawn`]) and reaped by their runner, and the
//! children std's `Command` spawns elsewhere (git, gh) stay in perfbisect's own process
//! group, which no orphan is in.

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// The environment variable that names the command a process descends from.
pub const MARK_VAR: &str = "PERFBISECT_COMMAND_ID";

/// The commands `process` has spawned and not yet reaped. The lock is held across
/// the spawn, so that an orphan sweep never mistakes a fresh command for an orphan.
static SPAWNED: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

/// Make perfbisect the subreaper of the commands it runs (once; later calls do nothing).
/// Without it (a kernel before 3.4) orphans go to init and only the process group and the
/// living tree of a command can be found.
pub fn adopt_orphans() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl with an integer argument changes only this process's attribute.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        }
    });
}

/// This perfbisect process's id for the commands it runs (`PERFBISECT_RUN`): its pid and
/// start time, `<pid>-<nanoseconds, hex>`, so that hooks of two perfbisect processes at once
/// (two caches, two terminals) can keep their servers and state apart.
pub fn run_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("{}-{nanos:x}", std::process::id())
    })
}

/// A new id for one command, for [`MARK_VAR`].
pub fn new_mark() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{}.{}", run_id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Spawn `cmd` and register it as perfbisect's own child until [`forget`].
pub fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    let mut spawned = lock();
    let child = cmd.spawn()?;
    spawned.push(child.id() as libc::pid_t);
    Ok(child)
}

/// The command `pid` has been reaped by its runner.
pub fn forget(pid: libc::pid_t) {
    lock().retain(|&p| p != pid);
}

fn lock() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    SPAWNED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether perfbisect has any child at all (running or not yet reaped). After a command was
/// reaped, `false` means it left nothing running (its orphans would be children of ours).
pub fn has_children() -> bool {
    // SAFETY: siginfo_t is plain data; WNOWAIT leaves any child waitable.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    !(r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

/// Reap the adopted orphans that have ended. Cheap when there are none: one system call.
pub fn reap_orphans() {
    let spawned = lock();
    // SAFETY: getpgrp has no failure mode.
    let own_group = unsafe { libc::getpgrp() };
    for _ in 0..256 {
        // SAFETY: as in `has_children`.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid filled `info` for a child that changed state (or left it zeroed).
        let pid = unsafe { info.si_pid() };
        if r != 0 || pid == 0 {
            return;
        }
        // One of perfbisect's own commands, or a child std spawned: its owner reaps it. The
        // orphans behind it are reaped on a later call.
        if spawned.contains(&pid) || stat(pid).is_none_or(|s| s.group == own_group) {
            return;
        }
        let mut status = 0;
        // SAFETY: reaping a zombie child that nobody else waits for.
        unsafe {
            libc::waitpid(pid, &mut status, libc::WNOHANG);
        }
    }
}

/// Kill what belongs to a command: the living tree below `root` (when it has not been
/// reaped yet), and the adopted orphans that carry `mark`, with their trees. Returns how
/// many processes outside the command's process group (`group`) were killed.
pub fn kill_tree(root: Option<libc::pid_t>, group: libc::pid_t, mark: &str) -> usize {
    // SAFETY: getpid and getpgrp have no failure mode.
    let (me, own_group) = unsafe { (libc::getpid(), libc::getpgrp()) };
    let marked = format!("{MARK_VAR}={mark}");
    let mut killed: HashSet<libc::pid_t> = HashSet::new();
    let mut outside = 0;
    let mut ours = Vec::new();
    // A few rounds: a process may fork between the listing and the signal.
    for _ in 0..8 {
        let table = processes();
        let mut children: HashMap<libc::pid_t, Vec<libc::pid_t>> = HashMap::new();
        for (&pid, s) in &table {
            children.entry(s.parent).or_default().push(pid);
        }
        let mut stack: Vec<libc::pid_t> =
            root.filter(|r| table.contains_key(r)).into_iter().collect();
        {
            let spawned = lock();
            stack.extend(table.iter().filter_map(|(&pid, s)| {
                (s.parent == me
                    && s.group != own_group
                    && !s.zombie
                    && !spawned.contains(&pid)
                    && carries(pid, &marked))
                .then_some(pid)
            }));
        }
        let mut new = 0;
        while let Some(pid) = stack.pop() {
            let Some(s) = table.get(&pid) else { continue };
            if !s.zombie && killed.insert(pid) {
                // SAFETY: kill only sends a signal.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                new += 1;
                if s.group != group {
                    outside += 1;
                }
                if s.parent == me && Some(pid) != root {
                    ours.push(pid);
                }
            }
            if let Some(c) = children.get(&pid) {
                stack.extend(c);
            }
        }
        if new == 0 {
            break;
        }
    }
    // Reap the killed children of ours (the others' parents were killed too, so they come
    // to us or to a parent that is dying); SIGKILL takes effect at once but asynchronously.
    let until = Instant::now() + Duration::from_millis(500);
    while !ours.is_empty() && Instant::now() < until {
        ours.retain(|&pid| {
            let mut status = 0;
            // SAFETY: reaping a child of ours that we just killed.
            unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 }
        });
        std::thread::sleep(Duration::from_millis(1));
    }
    reap_orphans();
    outside
}

/// A process a killed perfbisect left running, found and killed by [`end_leftovers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub pid: libc::pid_t,
    /// Its command line, arguments joined by spaces.
    pub command: String,
    /// The perfbisect it descends from (no longer alive).
    pub owner: libc::pid_t,
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "killed pid {} (`{}`), left running by perfbisect {}, which is no longer alive \
             (a kill -9?): nothing is measured beside it",
            self.pid, self.command, self.owner
        )
    }
}

/// Find the processes that commands of a perfbisect no longer alive left running (their
/// environment holds a [`MARK_VAR`] naming a perfbisect that has ended: a `kill -9` of it,
/// whose parent-death signal reached only the commands themselves, not what they started),
/// and kill them, so nothing runs beside what is measured now. Processes of a perfbisect that
/// is alive (another cache, another terminal) are left alone. Returns what was killed.
pub fn end_leftovers() -> Vec<Leftover> {
    // SAFETY: getpid has no failure mode.
    let me = unsafe { libc::getpid() };
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if pid == me || stat(pid).is_none_or(|s| s.zombie) {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let Some(mark) = env.split(|&b| b == 0).find_map(|v| {
            v.strip_prefix(MARK_VAR.as_bytes())
                .and_then(|r| r.strip_prefix(b"="))
        }) else {
            continue;
        };
        let Some((owner, started)) = parse_mark(mark) else {
            continue;
        };
        if owner == me || alive_since(owner, started) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let command = String::from_utf8_lossy(&cmdline)
            .trim_end_matches('\0')
            .replace('\0', " ");
        // SAFETY: kill only sends a signal.
        if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
            out.push(Leftover {
                pid,
                command,
                owner,
            });
        }
    }
    out
}

/// The perfbisect pid and the time (nanoseconds since the epoch) of a [`MARK_VAR`] value,
/// `<pid>-<nanoseconds, hex>.<n>` ([`run_id`], [`new_mark`]).
fn parse_mark(mark: &[u8]) -> Option<(libc::pid_t, u128)> {
    let text = std::str::from_utf8(mark).ok()?;
    let (pid, rest) = text.split_once('-')?;
    let nanos = rest.split('.').next()?;
    Some((pid.parse().ok()?, u128::from_str_radix(nanos, 16).ok()?))
}

/// Whether process `pid` is alive and is the one that was alive at `nanos` (since the epoch):
/// a pid used again by a process started later is not it.
fn alive_since(pid: libc::pid_t, nanos: u128) -> bool {
    let Some(start) = start_time(pid) else {
        return false;
    };
    // The start time counts clock ticks: a second's slack.
    start <= nanos / 1_000_000_000 + 1
}

/// When process `pid` started, seconds since the epoch (from its stat and the boot time).
fn start_time(pid: libc::pid_t) -> Option<u128> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks: u128 = text[text.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let boot: u128 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no failure mode for this name on Linux.
    let hz = u128::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|&h| h > 0)?;
    Some(boot + ticks / hz)
}

/// Whether process `pid` was started with the environment entry `entry`.
fn carries(pid: libc::pid_t, entry: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == entry.as_bytes()))
}

/// The fields of `/proc/PID/stat` used here.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stat {
    parent: libc::pid_t,
    group: libc::pid_t,
    zombie: bool,
}

fn stat(pid: libc::pid_t) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `PID (COMM) STATE PPID PGRP ...`, where COMM may hold spaces and parentheses.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?;
    Some(Stat {
        zombie: state == "Z" || state == "X",
        parent: f.next()?.parse().ok()?,
        group: f.next()?.parse().ok()?,
    })
}

/// Every process visible in /proc.
fn processes() -> HashMap<libc::pid_t, Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    dir.filter_map(|e| {
        let pid: libc::pid_t = e.ok()?.file_name().to_str()?.parse().ok()?;
        Some((pid, stat(pid)?))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_name_their_perfbisect_and_it_is_alive() {
        assert_eq!(parse_mark(b"123-1f.4"), Some((123, 31)));
        assert_eq!(parse_mark(b"junk"), None);
        let me = unsafe { libc::getpid() };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        assert!(alive_since(me, now));
        // A mark made before this process started is another's, whose pid this one reuses.
        assert!(!alive_since(me, 1_000_000_000));
        // Nothing of this test process's is a leftover.
        let mark = new_mark();
        assert!(parse_mark(mark.as_bytes()).is_some_and(|(p, _)| p == me));
    }

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(
            parse_stat("123 (a b) c)) S 7 9 9 0 -1"),
            Some(Stat {
                parent: 7,
                group: 9,
                zombie: false
            })
        );
        assert_eq!(
            parse_stat("5 (sleep) Z 1 5 5").map(|s| s.zombie),
            Some(true)
        );
        assert_eq!(parse_stat("5 (sleep"), None);
    }
}
