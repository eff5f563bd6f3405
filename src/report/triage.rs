//! What `triage` prints and posts: the summary a person reads in a CI log, `--format json`
//! (a top-level `findings` list, one object per culprit commit), `--format md` (a digest for a
//! job summary), and the issue bodies and comments that go to the bug tracker.

use std::fmt::Write as _;

use serde::Serialize;

use crate::store::findings::{self, Finding, Findings, Post, State, TestStep};

use super::md;
use super::units::level_pair;
use crate::base::text::{count, plural};
use crate::pipeline::eras::Change;

/// A search the budget left for the next run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Left {
    pub test: String,
    pub from: String,
    pub to: String,
}

/// One thing posted (or, with `--dry-run`, that would be).
#[derive(Debug, Clone, Serialize)]
pub struct Posted {
    pub commit: String,
    /// `created`, `found` (an issue with its marker existed already), `commented`, `fixed`.
    pub what: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub title: String,
    pub dry_run: bool,
}

/// Everything one `triage` run says.
pub struct View<'a> {
    pub findings: &'a Findings,
    /// Commits whose finding is new or changed this run.
    pub changed: &'a [String],
    pub left: &'a [Left],
    pub posted: &'a [Posted],
    pub failures: &'a [String],
    /// Changes of the machine said this run.
    pub eras: &'a [Change],
    pub searches: usize,
    pub builds: usize,
    pub runs: usize,
    pub seconds: f64,
}

fn short(c: &str) -> &str {
    c.get(..10).unwrap_or(c)
}

/// "h2-req-mem: 130.0 KB → 146.4 KB (+12.60 %, a regression), p = 1.0e-6, 10 vs 10 runs"
fn step_line(s: &TestStep) -> String {
    let (b, a) = level_pair(s.before, s.after, &s.unit, s.deterministic);
    format!(
        "{}: {b} -> {a} ({}, {}{}), {}, {} vs {} runs",
        s.test,
        crate::base::text::fmt_rel(s.rel_change, 2),
        if s.kind == "regression" {
            "a regression"
        } else {
            "an improvement"
        },
        s.interval
            .filter(|(lo, hi)| lo != hi)
            .map(|(lo, hi)| format!(
                "; 95 % interval {:+.2} % to {:+.2} %",
                lo * 100.0,
                hi * 100.0
            ))
            .unwrap_or_default(),
        evidence(s),
        s.runs.0,
        s.runs.1
    )
}

/// "p = 1.0e-6", or "exact" for plain numbers compared (a p-value of 0 would read as
/// certainty from two runs).
fn evidence(s: &TestStep) -> String {
    if s.deterministic {
        p_cell(s)
    } else {
        let cell = p_cell(s);
        if cell.starts_with('<') {
            format!("p {cell}")
        } else {
            format!("p = {cell}")
        }
    }
}

/// The p-value as a table cell: "1.0e-6", or "exact".
fn p_cell(s: &TestStep) -> String {
    if s.deterministic {
        "exact".to_string()
    } else if s.p_value >= crate::base::text::P_FLOOR || s.p_value.is_nan() {
        format!("{:.1e}", s.p_value)
    } else {
        // Past what a float's test can tell: a p of 0 would read as an exact comparison.
        format!("< {:.0e}", crate::base::text::P_FLOOR)
    }
}

/// Where a finding stands, in the words of the text and the Markdown: the store's `new`
/// (confirmed, not posted) is "not posted yet", since "new" would read as found this run.
fn state_word(st: State) -> &'static str {
    match st {
        State::New => "not posted yet",
        _ => st.as_str(),
    }
}

/// How many findings stand where ("2 posted, 1 not posted yet"). A finding the store calls
/// `new` is said as [`state_word`] says it, beside a headline that may say nothing was found.
fn states(f: &Findings) -> String {
    let mut parts = Vec::new();
    for st in [State::New, State::Posted, State::Unconfirmed, State::Fixed] {
        let n = f.findings.iter().filter(|x| x.state == st).count();
        if n > 0 {
            parts.push(format!("{n} {}", state_word(st)));
        }
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

fn spent(v: &View<'_>) -> String {
    format!(
        "{}, {}, {} in {}",
        plural(v.searches, "search", "searches"),
        count(v.builds, "build"),
        count(v.runs, "run"),
        crate::base::text::fmt_secs(v.seconds)
    )
}

/// The text for a CI log: one line when nothing is new, else each finding that changed.
pub fn text(v: &View<'_>) -> String {
    let mut o = String::new();
    let nothing =
        v.changed.is_empty() && v.posted.is_empty() && v.left.is_empty() && v.eras.is_empty();
    if nothing && v.failures.is_empty() {
        // "Nothing new" only when nothing waits either: a finding not posted yet (found
        // before by a run without `--attach`, or whose post failed) is still to act on.
        let waiting = v.findings.findings.iter().any(|x| x.state == State::New);
        let _ = writeln!(
            o,
            "triage: {} ({} known: {}); {}",
            if waiting {
                "no finding changed this run"
            } else {
                "nothing new"
            },
            count(v.findings.findings.len(), "finding"),
            states(v.findings),
            spent(v)
        );
        return o;
    }
    let _ = writeln!(
        o,
        "triage: {} changed this run; {} known: {}; {}",
        count(v.changed.len(), "finding"),
        count(v.findings.findings.len(), "finding"),
        states(v.findings),
        spent(v)
    );
    for ch in v.eras {
        let _ = writeln!(o, "machine: {}", super::eras::paragraph(ch));
    }
    for x in v
        .findings
        .findings
        .iter()
        .filter(|x| v.changed.contains(&x.commit))
    {
        let where_ = match (&x.state, &x.url) {
            (State::Posted, Some(u)) => format!(" [posted: {u}]"),
            (State::Fixed, _) => format!(
                " [fixed by {}]",
                x.fixed_by.as_deref().map(short).unwrap_or("?")
            ),
            (State::Unconfirmed, _) => " [unconfirmed: not posted]".into(),
            _ => " [confirmed, not posted yet]".into(),
        };
        let what = if x.state == State::Unconfirmed {
            "change point"
        } else {
            "culprit"
        };
        let _ = writeln!(o, "{what} {} {}{where_}", short(&x.commit), x.subject);
        for s in &x.tests {
            let _ = writeln!(o, "  {}", step_line(s));
            if !s.why.is_empty() {
                let _ = writeln!(o, "    why: {}", s.why.join(", "));
            }
        }
        for u in &x.unconfirmed {
            let _ = writeln!(o, "  {u}");
        }
    }
    for p in v.posted {
        let _ = writeln!(
            o,
            "{} {}: {}{}",
            if p.dry_run { "would post" } else { "posted" },
            p.what,
            p.title,
            p.url
                .as_deref()
                .map(|u| format!(" ({u})"))
                .unwrap_or_default()
        );
    }
    for l in v.left {
        let _ = writeln!(
            o,
            "left for the next run (budget): {} over {}..{}",
            l.test,
            short(&l.from),
            short(&l.to)
        );
    }
    for f in v.failures {
        let _ = writeln!(o, "not posted: {f}");
    }
    o
}

#[derive(Serialize)]
struct Json<'a> {
    findings: Vec<JsonFinding<'a>>,
    changed: &'a [String],
    posted: &'a [Posted],
    left: &'a [Left],
    failures: &'a [String],
    eras: &'a [Change],
    searches: usize,
    builds: usize,
    runs: usize,
    time_s: f64,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    commit: &'a str,
    subject: &'a str,
    state: &'static str,
    url: Option<&'a str>,
    tests: &'a [TestStep],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    unconfirmed: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    fixed_by: Option<&'a str>,
}

/// `--format json`: every finding kept, one object per culprit commit, with what this run did.
pub fn json(v: &View<'_>) -> anyhow::Result<String> {
    let out = Json {
        findings: v
            .findings
            .findings
            .iter()
            .map(|x| JsonFinding {
                commit: &x.commit,
                subject: &x.subject,
                state: x.state.as_str(),
                url: x.url.as_deref(),
                tests: &x.tests,
                unconfirmed: &x.unconfirmed,
                fixed_by: x.fixed_by.as_deref(),
            })
            .collect(),
        changed: v.changed,
        posted: v.posted,
        left: v.left,
        failures: v.failures,
        eras: v.eras,
        searches: v.searches,
        builds: v.builds,
        runs: v.runs,
        time_s: v.seconds,
    };
    Ok(super::json::json_pretty(&serde_json::to_value(&out)?)?)
}

fn table(o: &mut String, x: &Finding) {
    let _ = writeln!(
        o,
        "{}\n|---|---:|---:|---:|---:|---:|---|",
        md::row(&[
            "test",
            "before",
            "after",
            "change",
            "p",
            "runs",
            "why it moved"
        ])
    );
    for s in &x.tests {
        let (b, a) = level_pair(s.before, s.after, &s.unit, s.deterministic);
        let cells = [
            md::code(&s.test),
            md::text(&b),
            md::text(&a),
            format!(
                "{} ({}){}",
                crate::base::text::fmt_rel(s.rel_change, 2),
                md::text(&s.kind),
                s.interval
                    .filter(|(lo, hi)| lo != hi)
                    .map(|(lo, hi)| format!(
                        ", 95 % interval {:+.2} to {:+.2} %",
                        lo * 100.0,
                        hi * 100.0
                    ))
                    .unwrap_or_default()
            ),
            p_cell(s),
            format!("{} vs {}", s.runs.0, s.runs.1),
            md::text(&s.why.join(", ")),
        ];
        let _ = writeln!(o, "{}", md::row(&cells));
    }
}

/// `--format md`: a digest for a job summary.
pub fn markdown(v: &View<'_>) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## perfbisect triage\n");
    let _ = writeln!(
        o,
        "{} changed this run; {} known ({}); {}.\n",
        count(v.changed.len(), "finding"),
        count(v.findings.findings.len(), "finding"),
        states(v.findings),
        spent(v)
    );
    for ch in v.eras {
        let _ = writeln!(
            o,
            "- the machine changed: {}\n",
            md::text(&super::eras::paragraph(ch))
        );
    }
    for x in &v.findings.findings {
        let link = x
            .url
            .as_deref()
            .map(|u| format!(" — [issue]({u})"))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "### {} `{}` {}{link}\n",
            state_word(x.state),
            short(&x.commit),
            md::text(&x.subject)
        );
        if !x.tests.is_empty() {
            table(&mut o, x);
            let _ = writeln!(o);
        }
        for u in &x.unconfirmed {
            let _ = writeln!(o, "- unconfirmed: {}", md::text(u));
        }
        if let Some(b) = &x.fixed_by {
            let _ = writeln!(o, "- fixed by `{}`", short(b));
        }
        if !x.unconfirmed.is_empty() || x.fixed_by.is_some() {
            let _ = writeln!(o);
        }
    }
    for l in v.left {
        let _ = writeln!(
            o,
            "- left for the next run (budget): {} over `{}..{}`",
            md::code(&l.test),
            short(&l.from),
            short(&l.to)
        );
    }
    for f in v.failures {
        let _ = writeln!(o, "- not posted: {}", md::text(f));
    }
    o
}

/// What the finding's confirmation rests on, from its tests' evidence: their interleaved
/// re-runs (counted, with their windows), or exact values.
fn confirmation(x: &Finding) -> String {
    let reruns: usize = x.tests.iter().map(|t| t.reruns).sum();
    let windows: usize = x.tests.iter().map(|t| t.rerun_windows).sum();
    if reruns > 0 {
        format!(
            "confirmed by {} interleaved re-run{} in {} window{} of time",
            reruns,
            if reruns == 1 { "" } else { "s" },
            windows,
            if windows == 1 { "" } else { "s" }
        )
    } else if x.tests.iter().all(|t| t.deterministic) {
        "confirmed by exact values".to_string()
    } else {
        "confirmed by `find`'s search".to_string()
    }
}

/// The body of the issue a new culprit gets: every test it moved, the full report of each
/// test searched in this run, the commands that reproduce it, and the marker that keeps it
/// from being posted twice.
pub fn issue_body(
    x: &Finding,
    reports: &std::collections::BTreeMap<String, String>,
    invocation: &str,
) -> String {
    let mut o = String::new();
    // Commits that cannot be built next to the step: any of them may be the culprit, and the
    // re-runs compared the finding's commit with the last one before it that builds.
    match x.tests.iter().find(|t| t.candidates.len() > 1) {
        Some(t) => {
            let list: Vec<String> = t
                .candidates
                .iter()
                .map(|c| format!("`{}`", short(c)))
                .collect();
            let _ = writeln!(
                o,
                "**Ambiguous: any of {} may be the culprit.** Commits between them cannot be built, so the step could be pinned no closer. Found by `perfbisect triage`: {} moved {}, {} of `{}` {} and `{}`, the last commit before it that builds.\n",
                list.join(", "),
                md::code(short(&x.commit)),
                count(x.tests.len(), "test"),
                confirmation(x),
                short(&x.commit),
                md::text(&x.subject),
                short(&t.parent)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "Commit `{}` {} moved {}, found by `perfbisect triage` and {} of the commit and the one before it.\n",
                x.commit,
                md::text(&x.subject),
                count(x.tests.len(), "test"),
                confirmation(x)
            );
        }
    }
    table(&mut o, x);
    let _ = writeln!(o);
    // Each test's own report, found by its name (a test whose search ran on an earlier night,
    // before a post that failed, has none in this run: said, with the command that makes it).
    for t in &x.tests {
        match reports.get(&t.test) {
            Some(r) => {
                let _ = writeln!(
                    o,
                    "<details><summary>{}: the whole report</summary>\n\n{r}\n</details>\n",
                    md::text(&t.test)
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "{}: searched by an earlier run; {} makes its whole report.\n",
                    md::text(&t.test),
                    md::code(&format!(
                        "perfbisect {invocation}report {} {}..{}",
                        t.test, t.parent, x.commit
                    ))
                );
            }
        }
    }
    let body: String = x
        .tests
        .iter()
        .map(|t| {
            format!(
                "perfbisect {invocation}compare {} {} {}\n",
                t.test, t.parent, x.commit
            )
        })
        .collect();
    let fence = md::fence(&body);
    let _ = writeln!(o, "Reproduce:\n\n{fence}sh\n{body}{fence}\n");
    let create = Post::Create {
        commit: x.commit.clone(),
    };
    let named: Vec<String> = x.tests.iter().map(|t| t.test.clone()).collect();
    o += &markers(&create, &named);
    o
}

/// The markers of post `p` (naming `tests`), a line each: what finds it again on the issue.
fn markers(p: &Post, tests: &[String]) -> String {
    findings::markers(p, tests)
        .iter()
        .map(|m| findings::write_marker(m) + "\n")
        .collect()
}

/// The comment when `tests` join a posted culprit, with a marker per test.
pub fn join_comment(x: &Finding, tests: &[String]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "`perfbisect triage`: `{}` moved {} more:\n",
        short(&x.commit),
        count(tests.len(), "test")
    );
    for s in x.tests.iter().filter(|s| tests.contains(&s.test)) {
        let _ = writeln!(o, "- {}", md::text(&step_line(s)));
    }
    let join = Post::Join {
        commit: x.commit.clone(),
        tests: tests.to_vec(),
    };
    let _ = write!(o, "\n{}", markers(&join, &[]));
    o
}

/// The comment that closes issue `number`, opened for finding `x` beside its issue number
/// `kept` (two `triage` runs at once), as a duplicate ("Duplicate of #N": GitHub links it).
pub fn duplicate_comment(x: &Finding, number: u64, kept: u64) -> String {
    let close = Post::Close {
        commit: x.commit.clone(),
        number,
    };
    format!(
        "Duplicate of #{kept}: two runs of `perfbisect triage` found `{}` at the same time and both opened an issue; the older one keeps the finding.\n\n{}",
        short(&x.commit),
        markers(&close, &[])
    )
}

/// The comment when a later commit returned the level, with its marker.
pub fn fixed_comment(x: &Finding, by: &str, subject: &str) -> String {
    let fixed = Post::Fixed {
        commit: x.commit.clone(),
        by: by.to_string(),
    };
    let mut o = format!(
        "`perfbisect triage`: fixed by `{}` {} — a later step returned the level of {} ({}).\n",
        short(by),
        md::text(subject),
        x.tests
            .iter()
            .map(|t| md::code(&t.test))
            .collect::<Vec<_>>()
            .join(", "),
        x.tests
            .iter()
            .map(|t| {
                format!(
                    "{} before `{}`",
                    super::units::level(t.before, &t.unit, t.deterministic),
                    short(&x.commit)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Tests that joined the job after the finding: their step back is this fix too.
    let joined: Vec<&findings::TestStep> = x
        .fix_steps
        .iter()
        .filter(|s| !x.tests.iter().any(|t| t.test == s.test))
        .collect();
    if !joined.is_empty() {
        let _ = writeln!(
            o,
            "\nThe same commit moved {} back, measured only since after `{}` (at the level it left): part of this fix, not a change of its own:\n",
            if joined.len() == 1 { "a test that joined later" } else { "tests that joined later" },
            short(&x.commit)
        );
        for s in joined {
            let line = step_line(s);
            let rest = line.strip_prefix(s.test.as_str()).unwrap_or(&line);
            let _ = writeln!(o, "- {}{}", md::code(&s.test), md::text(rest));
        }
    }
    let _ = write!(o, "\n{}", markers(&fixed, &[]));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(state: State) -> Finding {
        Finding {
            commit: "eb73af253c0123456789012345678901234567aa".into(),
            subject: "tool: fix memory | leak www.example.com/x".into(),
            state,
            url: None,
            issue: None,
            tests: vec![TestStep {
                test: "h2-req-mem".into(),
                parent: "aa".into(),
                before: 130_000.0,
                after: 146_380.0,
                rel_change: 0.126,
                interval: Some((0.11, 0.14)),
                p_value: 1e-6,
                deterministic: false,
                runs: (10, 10),
                unit: "bytes".into(),
                kind: "regression".into(),
                why: vec!["Curl_h2 +1.20 %".into()],
                posted: false,
                candidates: Vec::new(),
                reruns: 20,
                rerun_windows: 2,
            }],
            unconfirmed: Vec::new(),
            fixed_by: None,
            fixed_posted: false,
            fix_steps: Vec::new(),
            duplicates: Vec::new(),
            first_seen: 1,
            updated: 1,
        }
    }

    #[test]
    fn an_issue_body_names_the_tests_keeps_its_columns_and_carries_its_marker() {
        let x = finding(State::New);
        let b = issue_body(&x, &Default::default(), "");
        assert!(b.contains(&findings::marker(&x.commit)), "{b}");
        assert!(b.contains("| `h2-req-mem` |"), "{b}");
        assert!(b.contains("\\|"), "the subject's pipe is escaped: {b}");
        assert!(!b.contains("www.example"), "no live autolink: {b}");
        assert!(b.contains("compare h2-req-mem aa eb73af253c"), "{b}");
    }

    #[test]
    fn nothing_new_is_one_line() {
        let f = Findings {
            findings: vec![finding(State::Posted)],
            ..Findings::default()
        };
        let v = View {
            findings: &f,
            changed: &[],
            left: &[],
            posted: &[],
            failures: &[],
            eras: &[],
            searches: 0,
            builds: 0,
            runs: 0,
            seconds: 1.0,
        };
        let t = text(&v);
        assert_eq!(t.lines().count(), 1, "{t}");
        assert!(
            t.starts_with("triage: nothing new (1 finding known: 1 posted)"),
            "{t}"
        );
        assert!(t.ends_with("0 runs in 1.0s\n"), "{t}");
    }

    /// Issue 50: "triage: nothing new (3 findings known: 3 new)" said two things at once.
    /// Findings confirmed and not posted (no `--attach`, or a post that failed) are not "new"
    /// this run, and a run that changed nothing while they wait does not say "nothing new".
    #[test]
    fn findings_waiting_to_be_posted_are_not_called_new() {
        let f = Findings {
            findings: vec![
                finding(State::New),
                finding(State::New),
                finding(State::New),
            ],
            ..Findings::default()
        };
        let mut v = View {
            findings: &f,
            changed: &[],
            left: &[],
            posted: &[],
            failures: &[],
            eras: &[],
            searches: 0,
            builds: 0,
            runs: 0,
            seconds: 0.2,
        };
        let t = text(&v);
        assert_eq!(
            t,
            "triage: no finding changed this run (3 findings known: 3 not posted yet); 0 \
             searches, 0 builds, 0 runs in 200ms\n"
        );
        let changed = [f.findings[0].commit.clone()];
        v.changed = &changed;
        let t = text(&v);
        assert!(
            t.starts_with(
                "triage: 1 finding changed this run; 3 findings known: 3 not posted yet; "
            ),
            "{t}"
        );
        let md = markdown(&v);
        assert!(
            md.contains("1 finding changed this run; 3 findings known (3 not posted yet)"),
            "{md}"
        );
        assert!(!t.contains(" new") && !md.contains(" new"), "{t}{md}");
    }
}
