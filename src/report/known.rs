//! The steps `triage` confirmed over a report's range that the report's own `find` did not
//! name: a report states what was already found (a search stops at its largest steps and
//! may leave a smaller confirmed one in a note), never dropping a confirmed culprit.

use std::fmt::Write as _;

use super::find::md_escape;
use super::units::quantity;
use crate::pipeline::rows::CommitRow;
use crate::store::findings::{Findings, State, TestStep};

/// A culprit `triage` confirmed for the report's test at a commit of the range.
#[derive(Debug, Clone, PartialEq)]
pub struct Known {
    /// Its position in the report's rows.
    pub pos: usize,
    pub state: State,
    /// The issue it was posted to.
    pub url: Option<String>,
    /// The step as `triage` confirmed it (levels, change, evidence).
    pub step: TestStep,
}

/// The confirmed findings (new, posted or fixed: not the unconfirmed) of `test` at commits
/// of `rows` that `named` (the commits the report's `find` named) leaves out, in the rows'
/// order.
pub fn confirmed(
    f: &Findings,
    test: &str,
    rows: &[CommitRow],
    named: &[gix::ObjectId],
) -> Vec<Known> {
    let mut out: Vec<Known> = f
        .findings
        .iter()
        .filter(|x| x.state != State::Unconfirmed)
        .filter_map(|x| {
            let step = x.tests.iter().find(|t| t.test == test)?;
            let id = gix::ObjectId::from_hex(x.commit.as_bytes()).ok()?;
            let pos = rows.iter().position(|r| r.commit.id == id)?;
            (!named.contains(&rows[pos].commit.id)).then(|| Known {
                pos,
                state: x.state,
                url: x.url.clone(),
                step: step.clone(),
            })
        })
        .collect();
    out.sort_by_key(|k| k.pos);
    out
}

/// The evidence of a confirmed step as the report's tables print it.
pub fn evidence(s: &TestStep) -> String {
    if s.deterministic {
        "exact".into()
    } else if s.reruns > 0 {
        format!(
            "{}, {} interleaved re-runs of parent and commit",
            crate::base::text::fmt_p(s.p_value),
            s.reruns
        )
    } else {
        crate::base::text::fmt_p(s.p_value)
    }
}

/// The Markdown section naming them, after the verdict; nothing when there are none.
pub fn markdown(o: &mut String, known: &[Known], rows: &[CommitRow]) {
    if known.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "Also confirmed over this range by `triage` ({} this search did not name: a search \
         stops at the largest steps; `triage` confirmed {} on the commit and the one before \
         it):\n",
        if known.len() == 1 { "a step" } else { "steps" },
        if known.len() == 1 { "it" } else { "each" },
    );
    for k in known {
        let Some(row) = rows.get(k.pos) else {
            continue;
        };
        let s = &k.step;
        let where_ = match (&k.url, k.state) {
            (Some(u), _) => format!("; posted: {u}"),
            (None, State::Fixed) => "; fixed since".to_string(),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "- `{}` {}: {} ({} → {}), {}{where_}",
            row.commit.short(),
            md_escape(&row.commit.subject),
            crate::base::text::fmt_rel(s.rel_change, 2),
            quantity(s.before, &s.unit),
            quantity(s.after, &s.unit),
            evidence(s),
        );
    }
    let _ = writeln!(o);
}

/// The JSON array of them (`triage_confirmed`).
pub fn json(known: &[Known], rows: &[CommitRow]) -> serde_json::Value {
    known
        .iter()
        .filter_map(|k| {
            let row = rows.get(k.pos)?;
            let s = &k.step;
            Some(serde_json::json!({
                "index": k.pos,
                "commit": row.commit.id.to_string(),
                "subject": row.commit.subject,
                "state": k.state.as_str(),
                "url": k.url,
                "before": s.before,
                "after": s.after,
                "rel_change": s.rel_change,
                "interval": s.interval.map(|(lo, hi)| [lo, hi]),
                "p_value": s.p_value,
                "deterministic": s.deterministic,
                "unit": s.unit,
            }))
        })
        .collect::<Vec<_>>()
        .into()
}
