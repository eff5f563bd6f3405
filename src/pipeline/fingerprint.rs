//! What a measurement depends on besides the commit: the machine (CPU model, cores, kernel,
//! OS), the build recipe, and the output of the commands listed in `[fingerprint] commands`
//! (a compiler's version, say). Every sample records the id of its fingerprint; `show`,
//! `detect` and `find` use the samples of the current one by default, since a number measured
//! on another machine or with another compiler is not comparable with one measured here.
//!
//! The full text of each fingerprint is kept once in `cache/fingerprints/<id>.txt`, so a
//! report can say what the other fingerprints were.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use crate::config::Config;
use crate::process::{self, Output, Spec};

/// Longest a `[fingerprint]` command may run: it is run by every command that reads samples.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// Output of a `[fingerprint]` command kept (a version banner, not a log).
const COMMAND_OUTPUT: usize = 4096;

/// The fingerprint of this machine and setup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// `model name` of /proc/cpuinfo (or the architecture where there is none).
    pub cpu: String,
    /// Cores perfbisect may use (`available_parallelism`).
    pub cores: usize,
    /// Kernel name and release (`uname -sr`).
    pub kernel: String,
    /// `PRETTY_NAME` of /etc/os-release.
    pub os: String,
    /// `Build::recipe_hash` of the configured build.
    pub recipe: u64,
    /// Each `[fingerprint]` command with its output (stdout and stderr, trimmed).
    pub commands: Vec<(String, String)>,
    /// How one test's runs are made, where that changes its numbers: the instructions
    /// counter, the CPUs runs are pinned to, address-space randomisation off. Empty for the
    /// machine's own fingerprint and for tests that set none of these.
    pub setup: Vec<(String, String)>,
}

impl Fingerprint {
    /// The fingerprint of this machine with `config`'s build recipe and fingerprint commands
    /// (run now, in the config's folder).
    pub fn current(config: &Config) -> Fingerprint {
        let commands = config
            .fingerprint_commands
            .iter()
            .map(|c| (c.clone(), run_command(c, &config.dir)))
            .collect();
        Fingerprint {
            cpu: cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: kernel(),
            os: os_name(),
            recipe: config.build.recipe_hash(),
            commands,
            setup: Vec::new(),
        }
    }

    /// This fingerprint with what `test`'s runs add to it: the counter of an instructions
    /// test, pinned CPUs, randomisation off (samples of one setup are never compared with
    /// another's). The machine's own fingerprint when the test sets none of them.
    pub fn for_test(&self, test: &crate::config::Test) -> Fingerprint {
        let mut f = self.clone();
        if matches!(test.metric, crate::config::Metric::Instructions) {
            if let Ok(sel) = crate::process::counter::select(test.counter) {
                f.setup.push(("counter".into(), sel.counter.describe()));
            }
        }
        if let Some(cpus) = &test.cpus {
            f.setup.push(("cpus".into(), crate::config::cpu_list(cpus)));
        }
        if !test.aslr {
            f.setup.push(("aslr".into(), "off".into()));
        }
        f
    }

    /// The canonical text: one `key: value` line each, commands last, in config order.
    pub fn text(&self) -> String {
        let mut s = format!(
            "cpu: {}\ncores: {}\nkernel: {}\nos: {}\nrecipe: {:016x}\n",
            self.cpu, self.cores, self.kernel, self.os, self.recipe
        );
        for (cmd, out) in &self.commands {
            s += &format!("command `{cmd}`:\n");
            for l in out.lines() {
                s += &format!("    {l}\n");
            }
        }
        for (k, v) in &self.setup {
            s += &format!("{k}: {v}\n");
        }
        s
    }

    /// A stable id of [`Self::text`] (the first 8 bytes of its BLAKE3 hash); never 0, which
    /// samples use for "not recorded".
    pub fn id(&self) -> u64 {
        id_of(&self.text())
    }

    /// Keep the text in `cache/fingerprints/<id>.txt` (once; written through a temp file and
    /// a rename, so it is whole or absent).
    pub fn save(&self, cache_root: &Path) -> anyhow::Result<()> {
        let path = path_of(cache_root, self.id());
        if path.is_file() {
            return Ok(());
        }
        let dir = path.parent().expect("fingerprints have a parent");
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        // Its own temp file, not the store's helper: the store reads fingerprint ids, so this
        // module stays below it.
        let mut tmp = {
            use std::os::unix::fs::PermissionsExt;
            tempfile::Builder::new()
                .prefix(".fingerprint.")
                .permissions(std::fs::Permissions::from_mode(0o666))
                .tempfile_in(dir)
                .with_context(|| format!("cannot create a temp file in {}", dir.display()))?
        };
        std::io::Write::write_all(&mut tmp, self.text().as_bytes())?;
        tmp.as_file().sync_all()?;
        tmp.persist(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }
}

/// The lines of a fingerprint's text that say how runs were made rather than where: the build
/// recipe and the test's setup (its instructions counter, pinned CPUs, ASLR off). Samples of a
/// test whose numbers do not depend on the machine compare when these agree, whatever the
/// CPU, kernel or `[fingerprint]` commands.
pub fn setup_part(text: &str) -> String {
    text.lines()
        .filter(|l| {
            ["recipe: ", "counter: ", "cpus: ", "aslr: "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// [`setup_part`] of fingerprint `id`'s kept text; `None` when it is not kept here.
pub fn setup_part_of(cache_root: &Path, id: u64) -> Option<String> {
    std::fs::read_to_string(path_of(cache_root, id))
        .ok()
        .map(|t| setup_part(&t))
}

/// The id of a fingerprint's text.
pub fn id_of(text: &str) -> u64 {
    let h = blake3::hash(text.as_bytes());
    let id = u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"));
    id.max(1)
}

/// Where the text of fingerprint `id` is kept.
pub fn path_of(cache_root: &Path, id: u64) -> PathBuf {
    cache_root
        .join("fingerprints")
        .join(format!("{id:016x}.txt"))
}

/// One line saying what fingerprint `id` was, from its kept text: the CPU, cores, kernel and
/// the first line of each command's output (or only the id when the text is not kept).
pub fn describe(cache_root: &Path, id: u64) -> String {
    let Ok(text) = std::fs::read_to_string(path_of(cache_root, id)) else {
        return format!("fingerprint {id:016x}");
    };
    let mut parts = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        if let Some(v) = l.strip_prefix("cpu: ") {
            parts.push(v.to_string());
        } else if let Some(v) = l.strip_prefix("cores: ") {
            parts.push(format!("{v} cores"));
        } else if let Some(v) = l.strip_prefix("kernel: ") {
            parts.push(v.to_string());
        } else if let Some(v) = l.strip_prefix("os: ") {
            parts.push(v.to_string());
        } else if let Some(v) = l.strip_prefix("recipe: ") {
            parts.push(format!("recipe {v}"));
        } else if let Some(v) = l.strip_prefix("counter: ") {
            parts.push(format!("instructions by {v}"));
        } else if let Some(v) = l.strip_prefix("cpus: ") {
            parts.push(format!("pinned to CPUs {v}"));
        } else if l == "aslr: off" {
            parts.push("ASLR off".into());
        } else if l.starts_with("command `") {
            if let Some(out) = lines.next_if(|n| n.starts_with("    ")) {
                parts.push(out.trim().to_string());
            }
        }
    }
    format!("fingerprint {id:016x}: {}", parts.join(", "))
}

/// Run one `[fingerprint]` command: its trimmed output, with the exit status when it failed
/// (a failing command is still a fact about the setup: it is recorded, not fatal).
fn run_command(cmd: &str, dir: &Path) -> String {
    let wrapped = format!("{{ {cmd}\n}} 2>&1");
    let fin = process::run(Spec {
        command: &wrapped,
        dir,
        env: Vec::new(),
        timeout: COMMAND_TIMEOUT,
        output: Output::Capture {
            regexes: Vec::new(),
            keep_stdout: COMMAND_OUTPUT,
        },
        interrupt: None,
        kill_leftovers: true,
        own_rss: false,
        extra: Default::default(),
    });
    match fin {
        Ok(f) => {
            let out = String::from_utf8_lossy(&f.stdout).trim().to_string();
            if f.status.success() {
                out
            } else {
                format!("{out}\n({})", f.status).trim().to_string()
            }
        }
        Err(e) => format!("(cannot run: {e:#})"),
    }
}

/// One line for reports' "how it was measured": "Linux 6.1.0-18-amd64 x86_64, Intel(R) Xeon(R)
/// CPU @ 2.20GHz, 2 cores".
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!(
        "{} {}, {}, {cores} core{}",
        kernel(),
        std::env::consts::ARCH,
        cpu_model(),
        if cores == 1 { "" } else { "s" }
    )
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "model name" | "Model" | "cpu model" | "Processor")
                .then(|| v.trim().to_string())
        })
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn kernel() -> String {
    // SAFETY: `uname` fills the zeroed struct; its fields are NUL-terminated strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return std::env::consts::OS.to_string();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!("{} {}", field(&u.sysname), field(&u.release))
}

fn os_name() -> String {
    let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| std::env::consts::OS.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_line_names_kernel_and_cores() {
        let d = machine();
        assert!(d.contains("core"), "{d}");
        if cfg!(target_os = "linux") {
            assert!(d.starts_with("Linux "), "{d}");
        }
    }

    #[test]
    fn id_follows_every_part_and_the_text_is_kept_once() {
        let cfg = crate::config::parse(
            "[fingerprint]\ncommands = [\"echo cc 1.0\", \"echo oops >&2; exit 3\"]\n",
            Path::new("/tmp/perfbisect.toml"),
        )
        .unwrap();
        let a = Fingerprint::current(&cfg);
        assert_eq!(a.commands[0].1, "cc 1.0");
        assert_eq!(a.commands[1].1, "oops\n(exit code 3)");
        assert!(!a.cpu.is_empty() && a.cores >= 1 && !a.kernel.is_empty());
        assert_eq!(a.id(), Fingerprint::current(&cfg).id(), "stable");
        let mut b = a.clone();
        b.commands[0].1 = "cc 2.0".into();
        assert_ne!(a.id(), b.id());
        let mut c = a.clone();
        c.recipe ^= 1;
        assert_ne!(a.id(), c.id());
        let d = tempfile::tempdir().unwrap();
        a.save(d.path()).unwrap();
        a.save(d.path()).unwrap();
        let line = describe(d.path(), a.id());
        assert!(line.contains(&a.cpu) && line.contains("cc 1.0"), "{line}");
        assert!(describe(d.path(), 42).contains("000000000000002a"));
    }
}
