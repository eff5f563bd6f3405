//! How a change of the machine is said ([`crate::pipeline::eras`]): the lines of its
//! fingerprint that changed, what it did to a test at the commit measured before and after
//! it, and the earlier eras' commits as `show` (text, JSON) and the HTML site list them,
//! marked, apart from the current era's and compared with none of them.

use std::fmt::Write as _;

use serde::Serialize;

use super::units::quantity_pair;
use crate::base::text::{date, fmt_num, fmt_rel};
use crate::pipeline::eras::{Change, Era, Eras};

/// "command `cc --version`: `cc 12.2.0` -> `cc 13.1.0`; kernel: `Linux 6.1.0` -> `Linux 6.5.0`"
pub fn lines(ch: &Change) -> String {
    if ch.changed.is_empty() {
        return format!(
            "fingerprint {} -> {} (the earlier one's text is not kept in this cache)",
            ch.from, ch.to
        );
    }
    ch.changed
        .iter()
        .map(|l| format!("{}: `{}` -> `{}`", l.what, l.before, l.after))
        .collect::<Vec<_>>()
        .join("; ")
}

/// "the toolchain change moved value +8.00 % at 067468c1d2, the same commit measured before
/// and after (1000 -> 1080, 3 vs 3 runs)", or why that is not known.
pub fn effect(ch: &Change) -> String {
    let Some(b) = &ch.bridge else {
        return format!(
            "what the {} change did to {} is not measured: no commit was measured both before and after it{}",
            ch.kind,
            ch.test,
            ch.note
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        );
    };
    let (before, after) = quantity_pair(b.before, b.after, &ch.unit);
    let moved = if b.reached {
        format!("moved {} {}", ch.test, fmt_rel(b.rel_change, 2))
    } else {
        format!(
            "left {} as it was ({}, within its threshold)",
            ch.test,
            fmt_rel(b.rel_change, 2)
        )
    };
    format!(
        "the {} change {moved} at {}, the same commit measured before and after ({before} -> {after}, {} vs {} runs)",
        ch.kind,
        b.commit.get(..10).unwrap_or(&b.commit),
        b.runs.0,
        b.runs.1
    )
}

/// The paragraph `show` and `triage` print about a change: what changed, what it did, and
/// that no commit is blamed for it.
pub fn paragraph(ch: &Change) -> String {
    format!(
        "the machine changed for {} ({}); {}; the samples before are an earlier era, compared with none after it, and no commit is blamed for the change",
        ch.test,
        lines(ch),
        effect(ch)
    )
}

/// "command `cc --version`: cc 12.2.0; fingerprint 1a2b…, measured 2026-12-01 10:00 UTC to
/// 2026-12-02 10:00 UTC": what the era's machine was where it differs from this one.
fn era_name(e: &Era) -> String {
    let day = |t: u64| date(i64::try_from(t).unwrap_or(i64::MAX));
    let was: String = e
        .differs
        .iter()
        .map(|l| format!("{}: {}; ", l.what, l.before))
        .collect();
    format!(
        "{was}fingerprint {:016x}, measured {} to {}",
        e.fingerprint,
        day(e.first),
        day(e.last)
    )
}

/// What `show` prints after its rows: each earlier era's commits (marked, apart from the
/// rows above) and the change into the current era. Empty without earlier eras.
pub fn text(eras: &Eras) -> String {
    let mut o = String::new();
    for e in &eras.earlier {
        let _ = writeln!(
            o,
            "\nearlier era ({}; not compared with the rows above):",
            era_name(e)
        );
        for r in &e.rows {
            let Some(s) = crate::stats::summarize(&r.values) else {
                continue;
            };
            let _ = writeln!(
                o,
                "{:<10}  {:>4}  {:>12}  {:>12}  {:>12}  {} [earlier era]",
                r.commit.short(),
                s.n,
                fmt_num(s.min),
                fmt_num(s.median),
                fmt_num(s.max),
                r.commit.subject
            );
        }
    }
    if let Some(ch) = &eras.change {
        let _ = writeln!(o, "\n{}", paragraph(ch));
    }
    o
}

#[derive(Serialize)]
struct JsonEra<'a> {
    fingerprint: String,
    changed: &'a [crate::pipeline::eras::LineChange],
    first: u64,
    last: u64,
    commits: Vec<JsonCommit>,
}

#[derive(Serialize)]
struct JsonCommit {
    commit: String,
    subject: String,
    n: usize,
    min: f64,
    median: f64,
    max: f64,
}

#[derive(Serialize)]
struct JsonEras<'a> {
    earlier: Vec<JsonEra<'a>>,
    change: Option<&'a Change>,
}

/// `show --format json`'s `eras`: each earlier era's commits and the change into the current
/// era (`null` when there is none).
pub fn json(eras: &Eras) -> anyhow::Result<serde_json::Value> {
    let earlier = eras
        .earlier
        .iter()
        .map(|e| JsonEra {
            fingerprint: format!("{:016x}", e.fingerprint),
            changed: &e.differs,
            first: e.first,
            last: e.last,
            commits: e
                .rows
                .iter()
                .filter_map(|r| {
                    let s = crate::stats::summarize(&r.values)?;
                    Some(JsonCommit {
                        commit: r.commit.id.to_string(),
                        subject: r.commit.subject.clone(),
                        n: s.n,
                        min: s.min,
                        median: s.median,
                        max: s.max,
                    })
                })
                .collect(),
        })
        .collect();
    Ok(serde_json::to_value(JsonEras {
        earlier,
        change: eras.change.as_ref(),
    })?)
}

/// The HTML site's section of a test page: the change and each earlier era's commits, in a
/// table of their own marked as an earlier era. Empty without earlier eras.
pub fn html(eras: &Eras, unit: &str) -> String {
    use super::html::esc;
    let mut o = String::new();
    if eras.earlier.is_empty() {
        return o;
    }
    let _ = writeln!(o, "<h2>Earlier eras of the machine</h2>");
    if let Some(ch) = &eras.change {
        let _ = writeln!(o, "<p>{}.</p>", esc(&paragraph(ch)));
    }
    for e in &eras.earlier {
        let _ = writeln!(
            o,
            "<p class=\"meta\">Earlier era: {} — not compared with the commits above.</p>",
            esc(&era_name(e))
        );
        o.push_str("<table class=\"era\"><tr><th class=\"l\">commit</th><th>runs</th><th>median</th><th class=\"wide\">min</th><th class=\"wide\">max</th><th class=\"l wide\">subject</th></tr>\n");
        for r in e.rows.iter().rev() {
            let Some(s) = crate::stats::summarize(&r.values) else {
                continue;
            };
            let q = |v: f64| esc(&super::units::quantity(v, unit));
            let _ = writeln!(
                o,
                "<tr><td class=\"l hash\" title=\"{}\">{}</td><td>{}</td><td>{}</td><td class=\"wide\">{}</td><td class=\"wide\">{}</td><td class=\"l subject wide\">{} <span class=\"none\">(earlier era)</span></td></tr>",
                r.commit.id,
                r.commit.short(),
                s.n,
                q(s.median),
                q(s.min),
                q(s.max),
                esc(&r.commit.subject)
            );
        }
        o.push_str("</table>\n");
    }
    o
}
