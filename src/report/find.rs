//! What `find` prints: the culprit(s) with the evidence, as text, JSON or Markdown for an issue.

use std::fmt::Write as _;

use serde::Serialize;

use crate::bisect::{Culprit, Outcome};
use crate::config::{Direction, Test};
use crate::git::CommitInfo;

use super::fmt_num;

/// Everything a `find` report shows.
pub struct FindReport<'a> {
    pub test: &'a Test,
    pub range: &'a str,
    /// Position 0 is the old end; 1.. the range's commits.
    pub commits: &'a [CommitInfo],
    pub outcome: &'a Outcome,
    pub probed: &'a [usize],
    pub notes: &'a [String],
    pub builds: usize,
    pub runs: usize,
    pub reused: usize,
    pub skipped: &'a [usize],
    pub seconds: f64,
}

/// "regression" or "improvement" for a relative change of a test.
pub fn judge(direction: Direction, rel_change: f64) -> &'static str {
    match (direction, rel_change > 0.0) {
        (Direction::Lower, true) | (Direction::Higher, false) => "regression",
        _ => "improvement",
    }
}

/// A commit time as `YYYY-MM-DD HH:MM UTC`.
pub fn date(secs: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
    let s = humantime::format_rfc3339_seconds(t).to_string();
    format!("{} {} UTC", &s[..10], &s[11..16])
}

#[derive(Serialize)]
struct Level {
    median: f64,
    n: usize,
}

#[derive(Serialize)]
struct JsonCulprit {
    commit: String,
    subject: String,
    author: String,
    date: String,
    parent: String,
    before: Level,
    after: Level,
    rel_change: f64,
    p_value: f64,
    candidates: Vec<String>,
    verified: bool,
    kind: &'static str,
}

#[derive(Serialize)]
struct JsonNoChange {
    before: f64,
    after: f64,
    p_value: f64,
    min_detectable: f64,
}

#[derive(Serialize)]
struct JsonFind {
    test: String,
    range: String,
    verdict: &'static str,
    culprit: Option<JsonCulprit>,
    culprits: Vec<JsonCulprit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    no_change: Option<JsonNoChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    best_guess: Option<JsonCulprit>,
    builds: usize,
    runs: usize,
    reused_samples: usize,
    skipped: Vec<String>,
    probed: Vec<String>,
    notes: Vec<String>,
}

impl FindReport<'_> {
    fn json_culprit(&self, c: &Culprit) -> JsonCulprit {
        let at = &self.commits[c.pos];
        JsonCulprit {
            commit: at.id.to_string(),
            subject: at.subject.clone(),
            author: at.author.clone(),
            date: date(at.time),
            parent: self.commits[c.parent].id.to_string(),
            before: Level {
                median: c.before,
                n: c.n_before,
            },
            after: Level {
                median: c.after,
                n: c.n_after,
            },
            rel_change: c.rel_change,
            p_value: c.p_value,
            candidates: c
                .candidates
                .iter()
                .map(|&p| self.commits[p].id.to_string())
                .collect(),
            verified: c.verified,
            kind: judge(self.test.direction, c.rel_change),
        }
    }

    fn unit(&self) -> String {
        if self.test.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.test.unit)
        }
    }

    fn spent(&self) -> String {
        format!(
            "{} build{}, {} run{} in {}{}",
            self.builds,
            if self.builds == 1 { "" } else { "s" },
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            crate::build::fmt_secs(self.seconds),
            if self.reused > 0 {
                format!(" ({} stored samples reused)", self.reused)
            } else {
                String::new()
            }
        )
    }

    fn culprit_lines(&self, o: &mut String, c: &Culprit, label: &str) {
        let at = &self.commits[c.pos];
        let parent = &self.commits[c.parent];
        let _ = writeln!(o, "{label}: {} {}", at.short(), at.subject);
        let _ = writeln!(o, "  author {}, {}", at.author, date(at.time));
        let _ = writeln!(
            o,
            "  {}: {} -> {}{} ({:+.2} %, a {}), p = {:.2e}, medians of {} vs {} runs{}",
            self.test.name,
            fmt_num(c.before),
            fmt_num(c.after),
            self.unit(),
            c.rel_change * 100.0,
            judge(self.test.direction, c.rel_change),
            c.p_value,
            c.n_before,
            c.n_after,
            if c.verified {
                ", confirmed by interleaved re-runs"
            } else {
                ", NOT confirmed"
            }
        );
        let _ = writeln!(o, "  parent {} {}", parent.short(), parent.subject);
        if c.candidates.len() > 1 {
            let _ = writeln!(
                o,
                "  ambiguous: unbuildable commits sit between; any of these may be the culprit:"
            );
            for &p in &c.candidates {
                let _ = writeln!(
                    o,
                    "    {} {}",
                    self.commits[p].short(),
                    self.commits[p].subject
                );
            }
        }
    }
}

/// Terminal text.
pub fn text(r: &FindReport<'_>) -> String {
    let mut o = String::new();
    match r.outcome {
        Outcome::Culprits(cs) => {
            if cs.len() > 1 {
                let _ = writeln!(o, "{} commits moved {}:", cs.len(), r.test.name);
            }
            for (i, c) in cs.iter().enumerate() {
                let label = if cs.len() > 1 {
                    format!("culprit {}", i + 1)
                } else {
                    "culprit".into()
                };
                r.culprit_lines(&mut o, c, &label);
            }
        }
        Outcome::NoChange {
            before,
            after,
            p_value,
            min_detectable,
        } => {
            let _ = writeln!(
                o,
                "no change: {} is {} at the old end and {}{} at the new end (p = {:.2}); these runs could have detected a change of {:.2} % or more",
                r.test.name,
                fmt_num(*before),
                fmt_num(*after),
                r.unit(),
                p_value,
                min_detectable * 100.0
            );
        }
        Outcome::Inconclusive { reason, best_guess } => {
            let _ = writeln!(o, "inconclusive: {reason}");
            if let Some(c) = best_guess {
                r.culprit_lines(&mut o, c, "best guess (unconfirmed)");
            }
        }
    }
    for n in r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    if !r.skipped.is_empty() {
        let names: Vec<String> = r.skipped.iter().map(|&p| r.commits[p].short()).collect();
        let _ = writeln!(o, "skipped (do not build): {}", names.join(" "));
    }
    let probed: Vec<String> = r.probed.iter().map(|&p| r.commits[p].short()).collect();
    let _ = writeln!(
        o,
        "searched {} ({} commits): {}",
        r.range,
        r.commits.len() - 1,
        r.spent()
    );
    let _ = writeln!(o, "probed in order: {}", probed.join(" "));
    o
}

/// `--format json`: one object, DESIGN.md's shape plus `culprits` and the evidence.
pub fn json(r: &FindReport<'_>) -> anyhow::Result<String> {
    let (culprits, no_change, reason, best_guess) = match r.outcome {
        Outcome::Culprits(cs) => (
            cs.iter().map(|c| r.json_culprit(c)).collect::<Vec<_>>(),
            None,
            None,
            None,
        ),
        Outcome::NoChange {
            before,
            after,
            p_value,
            min_detectable,
        } => (
            Vec::new(),
            Some(JsonNoChange {
                before: *before,
                after: *after,
                p_value: *p_value,
                min_detectable: *min_detectable,
            }),
            None,
            None,
        ),
        Outcome::Inconclusive { reason, best_guess } => (
            Vec::new(),
            None,
            Some(reason.clone()),
            best_guess.as_ref().map(|c| r.json_culprit(c)),
        ),
    };
    let culprit = match r.outcome {
        Outcome::Culprits(cs) => cs.first().map(|c| r.json_culprit(c)),
        _ => None,
    };
    let out = JsonFind {
        test: r.test.name.clone(),
        range: r.range.to_string(),
        verdict: r.outcome.verdict(),
        culprit,
        culprits,
        no_change,
        reason,
        best_guess,
        builds: r.builds,
        runs: r.runs,
        reused_samples: r.reused,
        skipped: r
            .skipped
            .iter()
            .map(|&p| r.commits[p].id.to_string())
            .collect(),
        probed: r
            .probed
            .iter()
            .map(|&p| r.commits[p].id.to_string())
            .collect(),
        notes: r.notes.to_vec(),
    };
    Ok(serde_json::to_string_pretty(&out)? + "\n")
}

/// `--format md`: a report to paste into a bug tracker.
pub fn markdown(r: &FindReport<'_>) -> String {
    let mut o = String::new();
    let t = r.test;
    let culprits: Vec<(&Culprit, bool)> = match r.outcome {
        Outcome::Culprits(cs) => cs.iter().map(|c| (c, true)).collect(),
        Outcome::Inconclusive {
            best_guess: Some(c),
            ..
        } => vec![(c, false)],
        _ => Vec::new(),
    };
    match r.outcome {
        Outcome::Culprits(cs) => {
            let c = &cs[0];
            let _ = writeln!(
                o,
                "### `{}`: {:+.2} % {} at {}\n",
                t.name,
                c.rel_change * 100.0,
                judge(t.direction, c.rel_change),
                r.commits[c.pos].short()
            );
        }
        Outcome::NoChange { .. } => {
            let _ = writeln!(o, "### `{}`: no change in `{}`\n", t.name, r.range);
        }
        Outcome::Inconclusive { reason, .. } => {
            let _ = writeln!(o, "### `{}`: inconclusive in `{}`\n", t.name, r.range);
            let _ = writeln!(o, "{reason}\n");
        }
    }
    if let Some(d) = &t.description {
        let _ = writeln!(
            o,
            "{d} ({}, {} is better).\n",
            t.metric.describe(),
            t.direction.as_str()
        );
    }
    for (c, confirmed) in &culprits {
        let at = &r.commits[c.pos];
        let parent = &r.commits[c.parent];
        let _ = writeln!(o, "| | commit | median | runs |\n|---|---|---:|---:|");
        let _ = writeln!(
            o,
            "| before | `{}` {} | {}{} | {} |",
            parent.short(),
            md_escape(&parent.subject),
            fmt_num(c.before),
            r.unit(),
            c.n_before
        );
        let _ = writeln!(
            o,
            "| after | `{}` {} | {}{} | {} |\n",
            at.short(),
            md_escape(&at.subject),
            fmt_num(c.after),
            r.unit(),
            c.n_after
        );
        let _ = writeln!(
            o,
            "- **{}**: {:+.2} % ({}), p = {:.2e} (two-sided Mann-Whitney U){}",
            if *confirmed {
                "culprit"
            } else {
                "best guess, unconfirmed"
            },
            c.rel_change * 100.0,
            judge(t.direction, c.rel_change),
            c.p_value,
            if c.verified {
                "; confirmed by interleaved re-runs of parent and culprit"
            } else {
                ""
            }
        );
        let _ = writeln!(o, "- author: {}, {}", at.author, date(at.time));
        let _ = writeln!(o, "- commit: `{}`", at.id);
        if c.candidates.len() > 1 {
            let list: Vec<String> = c
                .candidates
                .iter()
                .map(|&p| format!("`{}`", r.commits[p].short()))
                .collect();
            let _ = writeln!(
                o,
                "- ambiguous: unbuildable neighbours; candidates {}",
                list.join(", ")
            );
        }
        let _ = writeln!(o);
    }
    if let Outcome::NoChange {
        before,
        after,
        p_value,
        min_detectable,
    } = r.outcome
    {
        let _ = writeln!(
            o,
            "Old end {}, new end {}{} (p = {:.2}); a change of {:.2} % or more would have been detected.\n",
            fmt_num(*before),
            fmt_num(*after),
            r.unit(),
            p_value,
            min_detectable * 100.0
        );
    }
    for n in r.notes {
        let _ = writeln!(o, "- note: {}", md_escape(n));
    }
    let _ = writeln!(
        o,
        "Searched `{}` ({} commits, first parent): {}.\n",
        r.range,
        r.commits.len() - 1,
        r.spent()
    );
    if let Some((c, _)) = culprits.first() {
        let parent = &r.commits[c.parent].id;
        let at = &r.commits[c.pos].id;
        let _ = writeln!(o, "<details><summary>Reproduce</summary>\n");
        let _ = writeln!(o, "```sh");
        let _ = writeln!(o, "perfbisect compare {} {} {}", t.name, parent, at);
        let _ = writeln!(
            o,
            "git bisect start {at} {parent} && git bisect run perfbisect step {} --old {parent} --new {at}",
            t.name
        );
        let _ = writeln!(o, "```\n");
        let _ = writeln!(
            o,
            "Test command: `{}`, metric `{}`.",
            t.command,
            t.metric.describe()
        );
        let _ = writeln!(o, "</details>");
    }
    o
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}
