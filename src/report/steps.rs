//! The words every view says of a detected step: why an undecided one is undecided, and where
//! a step between measured commits may lie (its span).

use crate::stats::changepoint::Reason;
use crate::stats::Undecided;

/// What a view says of the evidence of an exact change point `cp`: "exact", or where
/// commits between it and the last measured commit were not measured (`across`), that it is
/// exact only between the measured commits, with this commit's own share of the change.
pub fn exact_evidence(cp: &crate::stats::ChangePoint, across: bool) -> String {
    match cp.interval.filter(|_| across) {
        Some((lo, hi)) => format!(
            "exact between the measured commits around it; this commit's own share {:+.2} % to \
             {:+.2} % (commits between were not measured)",
            lo * 100.0,
            hi * 100.0
        ),
        None => "exact".to_string(),
    }
}

/// "; the step lies after …" of a step whose last commit at the old level is `last` (its id,
/// else its index), with the commits between ([`span`]); empty where it is at its commit.
pub fn span_clause(last: (Option<&str>, i64), unmeasured: usize, measured: usize) -> String {
    let name = match last {
        (Some(c), _) => c[..10.min(c.len())].to_string(),
        (None, i) => format!("index {i}"),
    };
    span(&name, unmeasured, measured)
        .map(|t| format!("; the step lies {t}"))
        .unwrap_or_default()
}

/// For serde's `skip_serializing_if`: a count of none.
pub fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `detect`'s evidence of an exact change across `n` commits not measured, with this commit's
/// own share of it (`lo`, `hi`, relative).
pub fn exact_across(n: usize, (lo, hi): (f64, f64)) -> String {
    format!(
        "exact between the measured commits around it, not this commit's own step: its share \
         {:+.2} % to {:+.2} % (what the {n} commit{} not measured between could add)",
        lo * 100.0,
        hi * 100.0,
        if n == 1 { "" } else { "s" }
    )
}

/// Why `u` is undecided, and what decides it: "from 3 vs 3 runs: too few to decide; about 7
/// runs a side would", "measured apart: …", "… stands on 1 run …".
pub fn undecided_reason(u: &Undecided) -> String {
    match u.why {
        Reason::FewRuns => format!(
            "{} from {} vs {} runs: too few to decide; about {} runs a side would",
            crate::base::text::fmt_p(u.p_value),
            u.runs.0,
            u.runs.1,
            u.runs_needed,
        ),
        Reason::MeasuredApart => format!(
            "measured apart: no window of time links runs of both sides, and too few machine \
             states (nights, sessions) stand on each side to tell a step from the machine's \
             state; about {} runs a side, taken side by side, would decide it",
            u.runs_needed
        ),
        Reason::Machines => format!(
            "measured on different machines only: the move may be the machines' difference; \
             about {} runs a side on one machine, side by side, would tell whether a commit \
             moved too",
            u.runs_needed
        ),
        Reason::Nights => format!(
            "the runs taken side by side across it ({}) show a step the machine's nights beside \
             it do not (an outlier run, or a session's state); about {} runs a side, side by \
             side, would decide it",
            crate::base::text::fmt_p(u.p_value),
            u.runs_needed
        ),
        Reason::SideBySide => format!(
            "the runs taken side by side across it do not tell the sides apart{}; about {} runs \
             a side, side by side, would decide it",
            u.interval
                .map(|(lo, hi)| format!(
                    " (95 % interval {:+.2} % to {:+.2} %)",
                    lo * 100.0,
                    hi * 100.0
                ))
                .unwrap_or_default(),
            u.runs_needed
        ),
        Reason::OneRun => {
            let side = if u.runs.1 <= u.runs.0 { "new" } else { "old" };
            let n = u.runs.0.min(u.runs.1);
            let evidence = if u.p_value >= 1.0 {
                "values exact".to_string()
            } else {
                crate::base::text::fmt_p(u.p_value)
            };
            if n <= 1 {
                format!(
                    "{evidence}, but the {side} level stands on one run, which cannot tell a \
                     level from an outlier; a second run of it decides"
                )
            } else {
                format!(
                    "{evidence}, but the {side} level stands on {n} commits measured once each, \
                     too few to tell a level from outlier runs; about {} runs a side would \
                     decide it",
                    u.runs_needed,
                )
            }
        }
    }
}

/// Where a step between measured commits may lie, when commits between were not measured:
/// "after 1a2b3c4d5e, the last measured at the old level: 3 commits between not measured";
/// where `measured` commits between were measured on machine states that place them at
/// neither level, it says so; `None` where the step is at its commit.
pub fn span(last_old: &str, unmeasured: usize, measured: usize) -> Option<String> {
    let s = |n: usize| if n == 1 { "" } else { "s" };
    match (unmeasured, measured) {
        (0, 0) => None,
        (u, 0) => Some(format!(
            "after {last_old}, the last measured at the old level: {u} commit{} between not \
             measured",
            s(u)
        )),
        (u, m) => Some(format!(
            "after {last_old}, the last its runs place at the old level: {} commit{} between, \
             {m} measured apart from both levels{}",
            u + m,
            s(u + m),
            if u > 0 {
                format!(", {u} not measured")
            } else {
                String::new()
            }
        )),
    }
}

/// The short form of [`span`] for a table cell: " (after `1a2b3c4`; 3 between not measured)",
/// `code` wrapping the commit; empty where the step is at its commit.
pub fn span_short(last_old: &str, unmeasured: usize, measured: usize) -> String {
    match (unmeasured, measured) {
        (0, 0) => String::new(),
        (u, 0) => format!(" (after {last_old}; {u} between not measured)"),
        (u, m) => format!(
            " (after {last_old}; {} between, {m} measured apart from both levels)",
            u + m
        ),
    }
}
