//! Generated git repositories of a small C program whose printed metric, speed and memory
//! change at known commits: the bundled demo, and the fixture of the integration tests and
//! benchmarks. Written with `git fast-import`, so a thousand commits take a fraction of a second.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

/// The C program. Its behaviour is set by `params.h`, which every commit rewrites.
pub const APP_C: &str = r#"/* perfbisect fixture: prints a metric with noise, allocates memory, burns CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include "params.h"

static unsigned long long rng_state;

static double uniform(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}

int main(void) {
    if (NOISE_SEED == 0) {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(&rng_state, sizeof rng_state, 1, f) != 1) return 3;
        fclose(f);
    } else {
        /* Reproducible noise: the seed, the commit and how many runs this build has made
           pick the stream. The runs are counted in a file beside the config, named after
           the build's directory (perfbisect removes what a run adds to its build, so not
           there); run by hand, in the working directory. */
        long n = 0;
        char path[4096] = "noise.counter";
        const char *cfg = getenv("PERFBISECT_CONFIG_DIR"), *art = getenv("PERFBISECT_ARTIFACTS");
        if (cfg && art) {
            int k = snprintf(path, sizeof path, "%s/.noise-", cfg);
            for (const char *p = art; *p && k > 0 && k < (int)sizeof path - 1; p++)
                path[k++] = *p == '/' ? '_' : *p;
            if (k > 0 && k < (int)sizeof path) path[k] = 0;
        }
        FILE *c = fopen(path, "r");
        if (c) { if (fscanf(c, "%ld", &n) != 1) n = 0; fclose(c); }
        c = fopen(path, "w");
        if (c) { fprintf(c, "%ld\n", n + 1); fclose(c); }
        rng_state = (unsigned long long)NOISE_SEED * 0x9E3779B97F4A7C15ULL
                  ^ (unsigned long long)COMMIT_NO * 0xBF58476D1CE4E5B9ULL
                  ^ (unsigned long long)(n + 1) * 0x94D049BB133111EBULL;
        for (int i = 0; i < 4; i++) uniform();
    }
    rng_state |= 1;

    size_t bytes = (size_t)MEGABYTES << 20;
    char *p = malloc(bytes ? bytes : 1);
    if (!p) return 4;
    memset(p, 1, bytes);

    volatile unsigned long long x = 0;
    for (long long i = 0; i < WORK; i++) x += (unsigned long long)i ^ (x >> 3);

    double noise = sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
    double v = METRIC * (1.0 + NOISE_PCT / 100.0 * noise);
    if (DRIFT_PCT != 0.0) {
        /* A machine whose speed comes and goes with the wall clock. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)(ts.tv_sec % 86400) + ts.tv_nsec / 1e9;
        v *= 1.0 + DRIFT_PCT / 100.0 * sin(6.283185307179586 * t / DRIFT_PERIOD);
    }
    if (uniform() < OUTLIER_RATE) v *= 1.3;
    printf("value: %.6f\n", v);
    printf("checksum: %d\n", (int)(x & 1) + p[bytes ? bytes - 1 : 0]);
    free(p);
    return 0;
}
"#;

/// The outlier line of [`APP_C`], and what it reads in a repository whose outliers draw their
/// size from a range (`OUTLIER_LO`..`OUTLIER_HI`, shares; one more draw, only then): the
/// program of every other repository stays byte for byte what it was, and so do their ids.
const OUTLIER_LINE: &str = "    if (uniform() < OUTLIER_RATE) v *= 1.3;\n";
const OUTLIER_RANGE: &str = "    if (uniform() < OUTLIER_RATE) v *= 1.0 + OUTLIER_LO + (OUTLIER_HI - OUTLIER_LO) * uniform();\n";

/// The program's Makefile: `make` builds `./app`, as the config's own recipe does, so that
/// `perfbisect config init` finds the build and its program as it would in a user's project.
pub const MAKEFILE: &str = "# The demo program: `make` builds ./app.\nCC ?= cc\nCFLAGS ?= -O1\n\napp: app.c params.h\n\t$(CC) $(CFLAGS) -o app app.c -lm\n\nclean:\n\trm -f app\n\n.PHONY: clean\n";

/// One commit of a generated repository.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitSpec {
    pub subject: String,
    /// The value the program prints, before noise.
    pub metric: f64,
    /// Gaussian noise, % of the metric (0: a deterministic metric).
    pub noise_pct: f64,
    /// Share of runs whose value is too high (by `outlier_size`).
    pub outlier_rate: f64,
    /// How much too high an outlier is: a share drawn between the two (0.3, 0.3 by default:
    /// 1.3 times).
    pub outlier_size: (f64, f64),
    /// Memory allocated and touched.
    pub megabytes: u32,
    /// Iterations of a busy loop.
    pub work: u64,
    /// The commit does not compile.
    pub broken: bool,
    /// 0: noise from /dev/urandom; otherwise a reproducible stream per (seed, commit, run).
    pub noise_seed: u64,
    /// The commit changes only documentation (`docs/NEWS.md`), not the program: its build is
    /// byte-identical to its parent's, and the other fields are ignored.
    pub docs_only: bool,
    /// The printed value drifts with the wall clock by this % with this period (seconds).
    pub drift_pct: f64,
    pub drift_period: f64,
}

impl Default for CommitSpec {
    fn default() -> Self {
        CommitSpec {
            subject: String::new(),
            metric: 1000.0,
            noise_pct: 1.0,
            outlier_rate: 0.0,
            outlier_size: (0.3, 0.3),
            megabytes: 1,
            work: 1000,
            broken: false,
            noise_seed: 0,
            docs_only: false,
            drift_pct: 0.0,
            drift_period: 30.0,
        }
    }
}

/// The config that builds and measures the fixture program.
pub const CONFIG: &str = r#"# perfbisect config for the generated demo repository
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]
timeout = "2m"

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "units"
direction = "lower"
repeats = 5
threshold = "2%"
description = "The number the program prints (1% noise)"

[tests.rss]
command = "./app"
metric = "max-rss"
direction = "lower"
repeats = 10
threshold = "10%"
description = "Peak memory of one run"

[tests.speed]
command = "./app"
metric = "wall"
direction = "lower"
repeats = 5
threshold = "10%"
description = "Wall time of one run"

[tests.size]
command = "wc -c < app"
metric = { regex = "([0-9]+)" }
unit = "bytes"
deterministic = true                    # the same build always gives the same number
threshold = "0.5%"
description = "Size of the program (deterministic: one run per commit)"
"#;

fn params_h(c: &CommitSpec, n: usize, ranged: bool) -> String {
    let mut s = format!(
        "/* commit {n} */\n#define COMMIT_NO {n}\n#define METRIC {:.6}\n#define NOISE_PCT {:.6}\n#define OUTLIER_RATE {:.6}\n#define MEGABYTES {}\n#define WORK {}LL\n#define NOISE_SEED {}ULL\n#define DRIFT_PCT {:.6}\n#define DRIFT_PERIOD {:.6}\n",
        c.metric, c.noise_pct, c.outlier_rate, c.megabytes, c.work, c.noise_seed, c.drift_pct, c.drift_period
    );
    if ranged {
        let _ = write!(
            s,
            "#define OUTLIER_LO {:.6}\n#define OUTLIER_HI {:.6}\n",
            c.outlier_size.0, c.outlier_size.1
        );
    }
    if c.broken {
        s.push_str("#error this commit does not build\n");
    }
    s
}

/// Create a repository at `dir` (which must not exist or be empty) with one commit per spec
/// on branch `main`, the work tree checked out. Returns the commit ids, oldest first.
pub fn create_repo(dir: &Path, commits: &[CommitSpec]) -> anyhow::Result<Vec<String>> {
    if commits.is_empty() {
        bail!("a demo repository needs at least one commit");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    git(dir, &["init", "-q", "-b", "main", "."], None)?;
    let mut stream = String::new();
    let t0 = 1_700_000_000u64;
    let ranged = commits.iter().any(|c| c.outlier_size != (0.3, 0.3));
    let app = if ranged {
        APP_C.replace(OUTLIER_LINE, OUTLIER_RANGE)
    } else {
        APP_C.to_string()
    };
    for (i, c) in commits.iter().enumerate() {
        let n = i + 1;
        let subject = if c.subject.is_empty() {
            format!("Commit {n}")
        } else {
            c.subject.clone()
        };
        let msg = format!("{subject}\n");
        let when = t0 + 60 * i as u64;
        let _ = writeln!(stream, "commit refs/heads/main\nmark :{n}");
        let _ = writeln!(stream, "author Dev One <dev@example.com> {when} +0000");
        let _ = writeln!(stream, "committer Dev One <dev@example.com> {when} +0000");
        let _ = write!(stream, "data {}\n{msg}", msg.len());
        if n > 1 {
            let _ = writeln!(stream, "from :{}", n - 1);
        } else {
            let _ = write!(
                stream,
                "M 100644 inline app.c\ndata {}\n{app}\nM 100644 inline Makefile\ndata {}\n{MAKEFILE}\n",
                app.len(),
                MAKEFILE.len()
            );
        }
        if c.docs_only && n > 1 {
            let doc = format!("# News\n\nNotes up to commit {n}.\n");
            let _ = write!(
                stream,
                "M 100644 inline docs/NEWS.md\ndata {}\n{doc}\n",
                doc.len()
            );
        } else {
            let p = params_h(c, n, ranged);
            let _ = write!(stream, "M 100644 inline params.h\ndata {}\n{p}\n", p.len());
        }
    }
    git(dir, &["fast-import", "--quiet"], Some(stream.as_bytes()))?;
    git(dir, &["checkout", "-q", "-f", "main"], None)?;
    let ids = git(dir, &["rev-list", "--reverse", "main"], None)?;
    Ok(ids.lines().map(str::to_string).collect())
}

/// Run git in `dir`; returns stdout.
pub fn git(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> anyhow::Result<String> {
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Dev One")
        .env("GIT_AUTHOR_EMAIL", "dev@example.com")
        .env("GIT_COMMITTER_NAME", "Dev One")
        .env("GIT_COMMITTER_EMAIL", "dev@example.com")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().context("cannot run git (is it installed?)")?;
    if let Some(data) = stdin {
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(data)
            .context("cannot feed git")?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository of ranged outliers gets the program that draws their size; every other
    /// one keeps the program (and so the commit ids) it always had.
    #[test]
    fn only_ranged_outliers_change_the_program() {
        assert_eq!(APP_C.matches(OUTLIER_LINE).count(), 1);
        let plain = params_h(&CommitSpec::default(), 3, false);
        assert!(!plain.contains("OUTLIER_LO"), "{plain}");
        let c = CommitSpec {
            outlier_size: (0.05, 0.10),
            ..CommitSpec::default()
        };
        let ranged = params_h(&c, 3, true);
        assert!(ranged.contains("#define OUTLIER_LO 0.050000\n#define OUTLIER_HI 0.100000\n"));
    }
}
