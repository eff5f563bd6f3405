//! `report TEST RANGE`: a finding to paste into an issue (GitHub-flavoured Markdown) or to
//! feed a script (JSON): find's verdict with a one-line headline, the commits around each
//! culprit, detect's change points over the range, a sparkline, how it was measured, and the
//! commands that reproduce it.

use std::fmt::Write as _;
use std::ops::Range;

use serde::Serialize;

use super::find::{judge, md_escape, reproduce, FindReport};
use super::md;
use super::units::{level_pair, quantity};
use crate::base::text::{count, date};
use crate::bisect::{Culprit, Outcome};
use crate::pipeline::rows::{CommitRow, Status};
use crate::stats;

/// How the numbers were made, for the "How it was measured" section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    pub test_command: String,
    pub metric: String,
    pub repeats: usize,
    pub warmup: usize,
    pub max_repeats: usize,
    pub threshold: String,
    pub alpha: f64,
    pub deterministic: bool,
    pub build_command: Option<String>,
    pub artifacts: Vec<String>,
    /// Kernel, CPU and cores of the machine the report was made on.
    pub machine: String,
    pub perfbisect: String,
    /// How the runs were taken: side by side in interleaved windows (or back to back),
    /// pinned CPUs, address-space randomisation, the instructions counter.
    pub runs: String,
}

/// Everything a report shows besides `find`'s own report.
pub struct Issue<'a> {
    pub find: &'a FindReport<'a>,
    /// One row per commit of `find.commits` (same positions).
    pub rows: &'a [CommitRow],
    /// Position ranges of `rows` that are one first-parent chain each (the range first).
    pub blocks: &'a [Range<usize>],
    /// The rows of the range asked (its old end first): the searched chain, or more where
    /// imported rounds narrowed the search to a gap of it.
    pub range_rows: &'a [CommitRow],
    /// detect's change points over `range_rows` (positions there), and the steps it leaves
    /// undecided.
    pub detection: &'a crate::stats::Detection,
    pub measured: &'a Measured,
    /// The steps `triage` confirmed at commits of `range_rows` that `find` did not name.
    pub known: &'a [super::known::Known],
}

/// Commits shown on each side of a culprit.
const AROUND: usize = 3;

impl Issue<'_> {
    fn unit(&self) -> String {
        self.find.test.unit()
    }

    /// "value: +8.08 % (1000 units → 1081 units), p = 6.0e-20", as Markdown text (the test's
    /// name and unit are the user's, the unit perhaps a harness's).
    fn effect(&self, c: &Culprit) -> String {
        let (before, after) = level_pair(c.before, c.after, &self.unit(), self.find.deterministic);
        md_escape(&format!(
            "{}: {} ({before} → {after}{}), {}, {}",
            self.find.test.name,
            crate::base::text::fmt_rel(c.rel_change, 2),
            self.find
                .interval_text(c)
                .map(|i| format!("; {i}"))
                .unwrap_or_default(),
            if self.find.deterministic {
                self.find.evidence(c.p_value, true)
            } else {
                format!(
                    "{} ({})",
                    self.find.evidence(c.p_value, true),
                    self.find.test_name(c)
                )
            },
            self.find.basis(c)
        ))
    }

    /// A value with the test's unit, as Markdown text.
    fn quantity(&self, v: f64) -> String {
        md_escape(&quantity(v, &self.unit()))
    }

    fn culprits(&self) -> Vec<(&Culprit, bool)> {
        match self.find.outcome {
            Outcome::Culprits(cs) => cs.iter().map(|c| (c, true)).collect(),
            Outcome::Inconclusive {
                best_guess: Some(c),
                ..
            } => vec![(c, false)],
            _ => Vec::new(),
        }
    }

    /// The rows around `pos` on its own chain.
    fn around(&self, pos: usize) -> Range<usize> {
        let block = self
            .blocks
            .iter()
            .find(|b| b.contains(&pos))
            .cloned()
            .unwrap_or(0..self.rows.len());
        pos.saturating_sub(AROUND).max(block.start)..(pos + AROUND + 1).min(block.end)
    }
}

/// GitHub-flavoured Markdown for an issue.
pub fn markdown(x: &Issue<'_>) -> String {
    let r = x.find;
    let t = r.test;
    let mut o = String::new();
    let culprits = x.culprits();

    headline(&mut o, x);
    what_and_where(&mut o, x);
    super::find::sparkline_and_plot(&mut o, r);
    super::known::markdown(&mut o, x.known, x.range_rows);

    // Further steps, then a table around each culprit.
    if culprits.len() > 1 {
        let _ = writeln!(o, "All {} steps, largest first:\n", culprits.len());
        for (c, _) in &culprits {
            let at = &r.commits[c.pos];
            let _ = writeln!(
                o,
                "- `{}` {}: {}",
                at.short(),
                md_escape(&at.subject),
                x.effect(c)
            );
        }
        let _ = writeln!(o);
    }
    for (c, confirmed) in &culprits {
        around_table(&mut o, x, c, *confirmed);
    }
    why_it_moved(&mut o, r);
    notes(&mut o, r);

    change_points(&mut o, x);
    measured(&mut o, x);

    for (c, _) in &culprits {
        reproduce(&mut o, r, &r.finding(c));
    }
    if culprits.is_empty() {
        let body = format!("perfbisect {}find {} {}\n", r.invocation, t.name, r.range);
        let fence = md::fence(&body);
        let _ = writeln!(o, "<details><summary>Reproduce</summary>\n");
        let _ = writeln!(o, "{fence}sh\n{body}{fence}\n");
        let _ = writeln!(o, "</details>\n");
    }
    o
}

/// The headline: the verdict, the culprit, the effect.
fn headline(o: &mut String, x: &Issue<'_>) {
    let r = x.find;
    let t = r.test;
    match r.outcome {
        Outcome::Culprits(cs) => {
            let c = &cs[0];
            let at = &r.commits[c.pos];
            let _ = writeln!(
                o,
                "## {}: {} at `{}` {}\n",
                md::code(&t.name),
                judge(t.direction, c.rel_change),
                at.short(),
                md_escape(&at.subject)
            );
            let _ = writeln!(
                o,
                "**{}** — commit `{}` by {}, {}{}{}.\n",
                x.effect(c),
                at.id,
                md_escape(&at.author),
                date(at.time),
                r.confirmation(c)
                    .map(|how| format!("; {how}"))
                    .unwrap_or_default(),
                if cs.len() > 1 {
                    format!("; the largest of {} steps", cs.len())
                } else {
                    String::new()
                }
            );
        }
        Outcome::NoChange {
            before,
            after,
            p_value,
            min_detectable,
        } => {
            let _ = writeln!(
                o,
                "## {}: no change in {}\n",
                md::code(&t.name),
                md::code(r.range)
            );
            let (b, a) = level_pair(*before, *after, &x.unit(), r.deterministic);
            let _ = writeln!(
                o,
                "**{}: {} → {} between the ends, {}**; {}.\n",
                md_escape(&t.name),
                md_escape(&b),
                md_escape(&a),
                r.evidence(*p_value, false),
                if r.deterministic {
                    "any change of at least the threshold would have been seen".to_string()
                } else {
                    format!(
                        "a change of {:.2} % or more would have been detected",
                        min_detectable * 100.0
                    )
                }
            );
        }
        Outcome::Inconclusive { reason, best_guess } => {
            let _ = writeln!(
                o,
                "## {}: inconclusive in {}\n",
                md::code(&t.name),
                md::code(r.range)
            );
            match best_guess {
                Some(c) => {
                    let at = &r.commits[c.pos];
                    let _ = writeln!(
                        o,
                        "**{}** at `{}` {} (best guess, not confirmed): {}\n",
                        x.effect(c),
                        at.short(),
                        md_escape(&at.subject),
                        md_escape(reason)
                    );
                }
                None => {
                    let _ = writeln!(o, "{}\n", md_escape(reason));
                }
            }
        }
    }
}

/// What was measured (the test's description, metric, unit and direction) and the range
/// searched.
fn what_and_where(o: &mut String, x: &Issue<'_>) {
    let r = x.find;
    let t = r.test;
    let _ = writeln!(
        o,
        "{}{} ({}{} is better); range {}, {} on the first-parent chain{}.\n",
        t.description
            .as_deref()
            .map(|d| format!("{} — ", md_escape(d)))
            .unwrap_or_default(),
        md::code(&t.metric.describe()),
        if t.unit().is_empty() {
            "no unit, ".to_string()
        } else if t.unit() == t.metric.describe() {
            // "`instructions` (instructions, ...)" would say one word twice.
            String::new()
        } else {
            format!("{}, ", md_escape(&t.unit()))
        },
        t.direction.as_str(),
        md::code(r.range),
        count(x.range_rows.len().saturating_sub(1), "commit"),
        r.gap_searched()
            .map(|g| format!("; searched only {}", md_escape(&g)))
            .unwrap_or_default()
    );
}

/// "Why it moved": what changed in each culprit, when the report knows.
fn why_it_moved(o: &mut String, r: &FindReport<'_>) {
    if !r.why.is_empty() {
        let _ = writeln!(
            o,
            "### Why it moved
"
        );
        // Each culprit its own section when there are several.
        for (pos, w) in r.why {
            if r.why.len() > 1 {
                let at = &r.commits[*pos];
                let _ = writeln!(o, "#### `{}` {}\n", at.short(), md_escape(&at.subject));
            }
            o.push_str(&super::why::markdown(w));
        }
    }
}

/// The search's notes and the commits it skipped, with why.
fn notes(o: &mut String, r: &FindReport<'_>) {
    if !r.notes.is_empty() || !r.skipped.is_empty() {
        for n in r.notes {
            let _ = writeln!(o, "- note: {}", super::md::prose(n));
        }
        for s in r.skipped {
            let c = &r.commits[s.pos];
            let why = s.reason.lines().next().unwrap_or("");
            let _ = writeln!(
                o,
                "- skipped `{}` {}: {}",
                c.short(),
                md_escape(&c.subject),
                md_escape(why)
            );
        }
        let _ = writeln!(o);
    }
}

/// The commits around one culprit on its chain: runs, median, min and max.
fn around_table(o: &mut String, x: &Issue<'_>, c: &Culprit, confirmed: bool) {
    let r = x.find;
    let at = &r.commits[c.pos];
    let _ = writeln!(
        o,
        "### Commits around `{}`{}\n",
        at.short(),
        if confirmed { "" } else { " (best guess)" }
    );
    let _ = writeln!(
        o,
        "| | commit | subject | runs | median | min | max | vs its parent, side by side |\n|---|---|---|---:|---:|---:|---:|---:|"
    );
    for p in x.around(c.pos) {
        let row = &x.rows[p];
        let role = if p == c.pos {
            "**culprit**"
        } else if p == c.parent {
            "parent"
        } else if c.candidates.contains(&p) {
            "candidate"
        } else {
            ""
        };
        let numbers = match stats::summarize(&row.values) {
            Some(s) => [
                s.n.to_string(),
                x.quantity(s.median),
                x.quantity(s.min),
                x.quantity(s.max),
            ],
            None => {
                let what = match row.status {
                    Status::BuildFailed => "does not build",
                    Status::RunFailed => "runs failed",
                    _ => "not measured",
                };
                ["0".into(), what.into(), String::new(), String::new()]
            }
        };
        // Each row against the commit before it on the chain (the culprit against the parent
        // the headline names), "—" where the two share no window of time.
        let vs = (if p == c.pos {
            Some(c.parent)
        } else {
            p.checked_sub(1)
        })
        .and_then(|q| crate::pipeline::rows::step_between(&x.rows[q], row))
        .map_or_else(
            || "—".to_string(),
            |s| crate::base::text::fmt_rel(s.rel_change, 2),
        );
        let hash = if p == c.pos {
            format!("**`{}`**", row.commit.short())
        } else {
            format!("`{}`", row.commit.short())
        };
        // As `show` marks it: its runs are the identical build's, counted where they were made.
        let subject = match &row.same_build_as {
            Some(b) => format!(
                "{} *(same build as `{}`)*",
                md_escape(&row.commit.subject),
                crate::git::short(b)
            ),
            None => md_escape(&row.commit.subject),
        };
        let vs = if row.joins_previous && p != c.pos {
            "same build".to_string()
        } else {
            vs
        };
        let mut cells = vec![role.to_string(), hash, subject];
        cells.extend(numbers);
        cells.push(vs);
        let _ = writeln!(o, "{}", md::row(&cells));
    }
    let _ = writeln!(
        o,
        "\nRuns, median, min and max count every stored run of each commit, taken at different \
         times; \"vs its parent, side by side\" compares each commit with the one before it, on \
         only the runs of both taken in the same windows of time, as the headline compares the \
         culprit with its parent ({}); \"—\": none were.\n",
        md_escape(&r.basis(c))
    );
    let mut pos = c.pos;
    while let Some(m) = r.merge_of(pos) {
        let mc = &r.commits[m];
        let _ = writeln!(
            o,
            "Came in with the merge `{}` {}.\n",
            mc.short(),
            md_escape(&mc.subject)
        );
        pos = m;
    }
    if c.candidates.len() > 1 {
        let _ = writeln!(
            o,
            "Ambiguous: commits that do not build sit between; any of {} may be the culprit.\n",
            super::find::candidate_list(r, c)
        );
    }
}

/// "Change points": `detect`'s steps over the range asked beside `find`'s culprits.
fn change_points(o: &mut String, x: &Issue<'_>) {
    let r = x.find;
    let _ = writeln!(
        o,
        "### Change points\n\n`perfbisect detect` over every stored run of the {} of {} (the old end \
         first). A step whose commit and parent were measured side by side is stated from their runs \
         as the headline is (the same levels, change, p-value and test); another's levels and \
         change come from the runs taken side by side across it, its p-value from the detector's \
         test:\n",
        count(x.range_rows.len(), "commit"),
        md::code(r.range)
    );
    if x.detection.points.is_empty() {
        let _ = writeln!(
            o,
            "none{}.\n",
            if r.deterministic {
                ""
            } else if x.detection.undecided.is_empty() {
                " (a range measured only where `find` probed holds few commits to detect from)"
            } else {
                " decided"
            }
        );
        undecided(o, x);
        return;
    }
    let extra = change_point_table(o, x);
    if !extra.is_empty() {
        not_named(o, x, &extra);
    }
    undecided(o, x);
    culprits_not_change_points(o, x);
}

/// " (after `1a2b3c4`; 3 between not measured)" where commits between the last measured at
/// the old level (`last`) and the first at the new (`first`) were not measured.
fn span_cell(x: &Issue<'_>, last: usize, first: usize) -> String {
    match x.range_rows.get(last) {
        Some(r) if first > last + 1 => {
            let measured = crate::pipeline::rows::measured_between(x.range_rows, last, first);
            crate::report::steps::span_short(
                &format!("`{}`", r.commit.short()),
                first - last - 1 - measured,
                measured,
            )
        }
        _ => String::new(),
    }
}

/// The steps the stored runs show but do not decide, each with why and what decides it.
fn undecided(o: &mut String, x: &Issue<'_>) {
    let open = &x.detection.undecided;
    if open.is_empty() {
        return;
    }
    let it = if open.len() == 1 { "it" } else { "them" };
    let _ = writeln!(
        o,
        "Undecided: {} the stored runs show but do not decide (no claim is made of {it}; \
         `triage` searches {it}, and `find`'s interleaved re-runs decide):\n",
        if open.len() == 1 { "a step" } else { "steps" },
    );
    for u in open {
        let Some(row) = x.range_rows.get(u.index) else {
            continue;
        };
        let _ = writeln!(
            o,
            "- `{}`{} {}: {} → {} ({}), {}",
            row.commit.short(),
            span_cell(x, u.last_before, u.index),
            md_escape(&row.commit.subject),
            x.quantity(u.before),
            x.quantity(u.after),
            crate::base::text::fmt_rel(u.rel_change, 2),
            super::steps::undecided_reason(u),
        );
    }
    let _ = writeln!(o);
}

/// Where the searched chain shows the commit at `pos`.
fn on_chain(r: &FindReport<'_>, mut pos: usize) -> usize {
    // A culprit found inside a merged branch is the merge's step (one step, one build when
    // the merge brought exactly it), to say where the two answers differ.
    while let Some(m) = r.merge_of(pos) {
        pos = m;
    }
    pos
}

/// The table of change points, each with what `find` said of its commit; returns the change
/// points `find` did not name (short hashes).
fn change_point_table(o: &mut String, x: &Issue<'_>) -> Vec<String> {
    let r = x.find;
    // The commits `find` named (confirmed culprits), each where the searched chain shows it.
    let named: Vec<(gix::ObjectId, usize)> = match r.outcome {
        crate::bisect::Outcome::Culprits(cs) => cs
            .iter()
            .map(|c| (r.commits[on_chain(r, c.pos)].id, c.pos))
            .collect(),
        _ => Vec::new(),
    };
    let _ = writeln!(
        o,
        "| first commit of the new level | subject | before | after | change | evidence | `find` |\n|---|---|---:|---:|---:|---|---|"
    );
    let mut extra = Vec::new();
    for cp in &x.detection.points {
        let Some(row) = x.range_rows.get(cp.index) else {
            continue;
        };
        let culprit = named.iter().find(|(at, _)| *at == row.commit.id);
        let known = x.known.iter().any(|k| k.pos == cp.index);
        if culprit.is_none() && !known {
            extra.push(row.commit.short());
        }
        let cp_levels = level_pair(cp.before, cp.after, &x.unit(), cp.deterministic);
        let cells = [
            format!(
                "`{}`{}",
                row.commit.short(),
                span_cell(x, cp.last_before, cp.index)
            ),
            md_escape(&row.commit.subject),
            md_escape(&cp_levels.0),
            md_escape(&cp_levels.1),
            crate::base::text::fmt_rel(cp.rel_change, 2),
            if cp.deterministic {
                crate::report::steps::exact_evidence(cp, cp.last_before + 1 < cp.index)
            } else {
                format!(
                    "{} ({}){}",
                    crate::base::text::fmt_p(cp.p_value),
                    cp.test.name(),
                    match cp.windows {
                        0 => String::new(),
                        1 => "; runs side by side".to_string(),
                        k => format!("; runs side by side in {k} windows"),
                    }
                )
            },
            match culprit {
                None if known => "not named; confirmed by `triage`".to_string(),
                None => "not named".to_string(),
                Some(&(_, pos)) if r.commits[pos].id == row.commit.id => "culprit".to_string(),
                Some(&(_, pos)) => format!("culprit `{}`, merged here", r.commits[pos].short()),
            },
        ];
        let _ = writeln!(o, "{}", md::row(&cells));
    }
    let _ = writeln!(o);
    extra
}

/// Why the change points in `extra` are not `find`'s culprits, and how to decide them.
fn not_named(o: &mut String, x: &Issue<'_>, extra: &[String]) {
    let list: Vec<String> = extra.iter().map(|c| format!("`{c}`")).collect();
    let _ = writeln!(
        o,
        "{} {} not named by `find`: `find` names only steps it confirms on the commit and \
         the one before it (by interleaved re-runs, or exact values), while change points come \
         from every stored run at once, unconfirmed. {} over the commits around {} decides {}.\n",
        list.join(", "),
        if extra.len() == 1 { "is" } else { "are" },
        md::code(&format!("perfbisect find {} OLD..NEW", x.find.test.name)),
        if extra.len() == 1 { "it" } else { "each" },
        if extra.len() == 1 { "it" } else { "them" },
    );
}

/// The culprits `find` confirmed that `detect` did not find, with which of two reasons it is.
fn culprits_not_change_points(o: &mut String, x: &Issue<'_>) {
    let r = x.find;
    let missing: Vec<&Culprit> = match r.outcome {
        crate::bisect::Outcome::Culprits(cs) => cs
            .iter()
            .filter(|c| {
                !x.detection.points.iter().any(|cp| {
                    x.range_rows
                        .get(cp.index)
                        .is_some_and(|row| row.commit.id == r.commits[on_chain(r, c.pos)].id)
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    // Few runs of its own on either side, or plenty that detect still did not separate from
    // the commits around it: two different reasons, never the first said of the second.
    let own = |pos: usize| x.rows.get(pos).map_or(0, |row| row.own);
    let (few, many): (Vec<&Culprit>, Vec<&Culprit>) = missing
        .into_iter()
        .partition(|c| own(c.parent).min(own(c.pos)) < crate::pipeline::rows::RANK_RUNS);
    let names = |cs: &[&Culprit]| {
        let list: Vec<String> = cs
            .iter()
            .map(|c| format!("`{}`", r.commits[c.pos].short()))
            .collect();
        match list.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => list.join(""),
        }
    };
    // One culprit or several: the sentence agrees with its subject.
    let subject = |cs: &[&Culprit]| {
        if cs.len() == 1 {
            format!("`find`'s culprit {} is no change point", names(cs))
        } else {
            format!("`find`'s culprits {} are no change points", names(cs))
        }
    };
    if !few.is_empty() {
        let _ = writeln!(
            o,
            "{} here: the stored runs around {} are too few for `detect` to be as certain as \
             the confirmation was.\n",
            subject(&few),
            if few.len() == 1 { "it" } else { "each" }
        );
    }
    if !many.is_empty() {
        let one = many.len() == 1;
        let _ = writeln!(
            o,
            "{} here, though {} runs and {} parent's are not few: `detect` weighs every stored \
             run of the range at once and did not separate {} from the commits around {} (where \
             commits differ among themselves by more than their runs spread, it tests on the \
             levels of the commits measured near a step, and a step close to a larger one has \
             few of them on one side). The confirmation of {} against {} parent decided {}: the \
             numbers above are {}.\n",
            subject(&many),
            if one { "its" } else { "their" },
            if one { "its" } else { "each one's" },
            if one { "this step" } else { "these steps" },
            if one { "it" } else { "them" },
            if one { "the culprit" } else { "each culprit" },
            if one { "its" } else { "its own" },
            if one { "it" } else { "them" },
            if one { "its" } else { "theirs" },
        );
    }
}

fn measured(o: &mut String, x: &Issue<'_>) {
    let m = x.measured;
    let _ = writeln!(o, "### How it was measured\n");
    let _ = writeln!(
        o,
        "- test: {}, metric {}; {}",
        md::code(&m.test_command),
        md::code(&m.metric),
        if m.deterministic {
            "deterministic: one run per commit, values compared exactly".to_string()
        } else {
            format!(
                "{} per commit{}, up to {} when in doubt; threshold {}, α {}",
                count(m.repeats, "run"),
                if m.warmup > 0 {
                    format!(" after {} warm-up", m.warmup)
                } else {
                    String::new()
                },
                m.max_repeats,
                md_escape(&m.threshold),
                m.alpha
            )
        }
    );
    match &m.build_command {
        Some(b) => {
            let artifacts = if m.artifacts.is_empty() {
                String::new()
            } else {
                format!(
                    ", artifacts {}",
                    m.artifacts
                        .iter()
                        .map(|a| md::code(a))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            o.push_str(&md::command_item("build", b, &artifacts));
        }
        None => {
            let _ = writeln!(o, "- build: none (artifacts copied as checked out)");
        }
    }
    let _ = writeln!(o, "- runs: {}", md_escape(&m.runs));
    if let Some(p) = super::provenance::Provenance::of(x.range_rows).sentence() {
        let _ = writeln!(
            o,
            "- numbers: {} (a culprit is named only from runs measured here)",
            md_escape(&p)
        );
    }
    let _ = writeln!(o, "- search: {}", x.find.spent());
    if let Some(d) = x.find.facts.drift_line(x.find.commits) {
        let _ = writeln!(o, "- drift: {}", md_escape(&d));
    }
    let _ = writeln!(o, "- machine: {}", md_escape(&m.machine));
    let _ = writeln!(o, "- perfbisect {}\n", m.perfbisect);
}

/// Where a step may lie, as `detect --format json` says it: the last commit measured at the
/// old level and how many between were not measured.
fn span_json(x: &Issue<'_>, last: usize, first: usize) -> serde_json::Value {
    let measured = crate::pipeline::rows::measured_between(x.range_rows, last, first);
    let mut span = serde_json::json!({
        "last_old_index": last,
        "last_old_commit": x.range_rows.get(last).map(|r| r.commit.id.to_string()),
        "unmeasured": first.saturating_sub(last + 1 + measured),
    });
    if measured > 0 {
        span["measured"] = measured.into();
    }
    span
}

/// `report --format json`: `show --format json`'s object for the searched chain (every
/// commit, the summary, every sample) with `range`, `find` (find's JSON object),
/// `change_points`, `undecided`, `sparkline` and `measured` added.
pub fn json(x: &Issue<'_>, find_json: serde_json::Value) -> anyhow::Result<String> {
    let r = x.find;
    let chain = x.range_rows;
    // The chain starts at the old end the search measured.
    let mut v = super::export::json_value(r.test, chain, true)?;
    let cps: Vec<serde_json::Value> = x
        .detection
        .points
        .iter()
        .filter_map(|cp| {
            let row = x.range_rows.get(cp.index)?;
            Some(serde_json::json!({
                "index": cp.index,
                "commit": row.commit.id.to_string(),
                "subject": row.commit.subject,
                "before": cp.before,
                "after": cp.after,
                "rel_change": cp.rel_change,
                "p_value": cp.p_value,
                "test": cp.test,
                "deterministic": cp.deterministic,
                "interval": cp.interval.map(|(lo, hi)| [lo, hi]),
                "windows": cp.windows,
                "span": span_json(x, cp.last_before, cp.index),
            }))
        })
        .collect();
    let open: Vec<serde_json::Value> = x
        .detection
        .undecided
        .iter()
        .filter_map(|u| {
            let row = x.range_rows.get(u.index)?;
            Some(serde_json::json!({
                "index": u.index,
                "commit": row.commit.id.to_string(),
                "subject": row.commit.subject,
                "before": u.before,
                "after": u.after,
                "rel_change": u.rel_change,
                "p_value": u.p_value,
                "why": u.why,
                "runs": [u.runs.0, u.runs.1],
                "runs_needed": u.runs_needed,
                "span": span_json(x, u.last_before, u.index),
            }))
        })
        .collect();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("range".into(), r.range.into());
        obj.insert("find".into(), find_json);
        obj.insert("change_points".into(), cps.into());
        obj.insert("undecided".into(), open.into());
        obj.insert(
            "triage_confirmed".into(),
            super::known::json(x.known, x.range_rows),
        );
        obj.insert(
            "sparkline".into(),
            r.sparkline
                .clone()
                .map_or(serde_json::Value::Null, Into::into),
        );
        obj.insert("measured".into(), serde_json::to_value(x.measured)?);
    }
    // `"schema"` first, as in every JSON output (the guide's JSON reference says so, and
    // tests/suite/guide_json.rs holds every output to it).
    Ok(super::json::json_pretty(&v)?)
}
