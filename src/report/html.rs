//! `report --format html`: a static site like curl's performance page, and more: an index of
//! every test (latest median, stake verdict, trend arrow, sparkline) and a page per test
//! (summary statistics, stake, Mann-Kendall trend with Sen's slope, the last 100 commits' band
//! chart, the distribution, the full range down-sampled to 20 points, change points linked to
//! their commits, the build and test configuration).
//!
//! No JavaScript, no network: the pages, one style sheet inside each and the charts (SVG files
//! beside them, drawn twice: wide, and narrow for phones through `<picture>`) open from disk.
//! Nothing in a page depends on the time it was made, so the same data gives the same files.

use std::fmt::Write as _;

use super::charts;
use super::plot;
use super::show::{summarize, RangeSummary};
use super::units::{quantity, quantity_pair, signed_quantity};
use crate::base::text::fmt_num;
use crate::config::{Build, Test};
use crate::pipeline::rows::{CommitRow, Status};
use crate::stats::{self, ChangePoint};

use super::charts::RECENT;
/// Points of the full-range chart (curl's page uses 20).
pub const FULL_RANGE_POINTS: usize = 20;

/// One test's page: its commits (oldest first) and their change points.
pub struct Page<'a> {
    pub test: &'a Test,
    /// What the commits are ("all 1000 commits with results", "v8.21..HEAD").
    pub scope: String,
    pub rows: &'a [CommitRow],
    /// detect's decided steps.
    pub change_points: Vec<ChangePoint>,
    /// The steps the stored runs show but do not decide.
    pub undecided: Vec<crate::stats::Undecided>,
    /// Per step (by the row of its first commit measured at the new level): the commits
    /// between it and the last measured at the old level that were not measured, where the
    /// rows do not hold them (every commit with results). Else the rows between.
    pub unmeasured: std::collections::HashMap<usize, usize>,
    /// For change points whose culprit and parent were profiled (by `find` or `report`): the
    /// functions whose cost changed, by the change point's row.
    pub why: Vec<(usize, crate::pipeline::profile::Why)>,
    /// The section of the earlier eras of the machine (samples of other fingerprints, listed
    /// apart: [`super::eras::html`]); empty when there are none.
    pub earlier_eras: String,
}

/// What every page shows about where the numbers come from.
pub struct Site<'a> {
    /// Shown in the index's heading (the repository's folder name).
    pub name: String,
    pub build: &'a Build,
    pub perfbisect: String,
}

/// A file of the site: path relative to the site's folder, and its bytes.
pub type File = (String, Vec<u8>);

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const CSS: &str = r#"
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f5f6f8; color: #212529;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1000px; margin: 0 auto; padding: 16px; }
a { color: #1452a0; }
h1 { font-size: 1.5rem; margin: .3em 0 .1em; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 1.4em 0 .4em; }
p, li { overflow-wrap: anywhere; }
.meta { color: #5f6670; margin: 0 0 1em; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(270px, 1fr)); gap: 12px; }
.card { background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 12px 14px; min-width: 0; }
a.card { display: block; color: inherit; text-decoration: none; }
a.card:hover { border-color: #1452a0; }
.card h2 { margin: 0 0 .4em; font-size: 1rem; }
.name { font-weight: 600; color: #1452a0; overflow-wrap: anywhere; }
.desc { color: #5f6670; font-size: .9em; overflow-wrap: anywhere; }
.big { font-size: 1.3em; font-weight: 600; }
.better { color: #1e7b3c; } .worse { color: #c0392b; } .none { color: #5f6670; }
table.bars { width: 100%; } td.barcell { width: 40%; } .bar { height: 12px; border-radius: 3px; }
.bar.worse { background: #c0392b; } .bar.better { background: #1e7b3c; }
.arrow { font-size: 1.3em; }
svg.spark { display: block; width: 100%; height: 36px; margin-top: 6px; }
figure { margin: 0 0 12px; background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 8px; }
figure img { display: block; width: 100%; height: auto; }
figcaption { color: #5f6670; font-size: .9em; padding: 4px 4px 0; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { padding: 4px 6px; text-align: right; border-bottom: 1px solid #eceef1; white-space: nowrap; }
th { font-weight: 600; color: #5f6670; white-space: normal; }
.l { text-align: left; }
td.subject { white-space: normal; overflow-wrap: anywhere; min-width: 8em; }
td.wrap { white-space: normal; }
table.kv td, table.kv th { border: 0; padding: 1px 6px 1px 0; white-space: normal; vertical-align: top; }
table.kv td:first-child { white-space: nowrap; }
code, .hash { font-family: "DejaVu Sans Mono", ui-monospace, monospace; font-size: .92em; overflow-wrap: anywhere; }
tr.cp td { background: #fff4e5; }
tr:target td { background: #e3eefc; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
dt { color: #5f6670; } dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
footer { color: #5f6670; font-size: .85em; margin: 2em 0 1em; }
@media (max-width: 640px) {
  main { padding: 8px; }
  .wide { display: none; }
  dl { grid-template-columns: 1fr; }
  dd { margin-bottom: 4px; }
}
"#;

fn head(o: &mut String, title: &str) {
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc(title)
    );
}

fn foot(o: &mut String, site: &Site<'_>, extra: &str) {
    let _ = write!(
        o,
        "<footer>Made by perfbisect {}{extra}. Static files: no script, no network.</footer>\n</main>\n</body>\n</html>\n",
        esc(&site.perfbisect)
    );
}

/// An inline SVG sparkline of the medians (LTTB down to 100 points).
fn spark_svg(medians: &[f64]) -> String {
    let pts: Vec<(f64, f64)> = medians
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .map(|(i, &v)| (i as f64, v))
        .collect();
    if pts.len() < 2 {
        return String::new();
    }
    let pts = stats::lttb(&pts, 100);
    let (x0, x1) = (pts[0].0, pts[pts.len() - 1].0);
    let (lo, hi) = pts
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.1), b.max(p.1))
        });
    let mut poly = String::new();
    for (x, y) in &pts {
        let px = if x1 > x0 {
            (x - x0) / (x1 - x0) * 200.0
        } else {
            100.0
        };
        let py = if hi > lo {
            34.0 - (y - lo) / (hi - lo) * 32.0
        } else {
            18.0
        };
        let _ = write!(poly, "{px:.1},{py:.1} ");
    }
    format!(
        "<svg class=\"spark\" viewBox=\"0 0 200 36\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"medians, oldest first\">\
         <polyline fill=\"none\" stroke=\"#1446a0\" stroke-width=\"1.5\" vector-effect=\"non-scaling-stroke\" points=\"{}\"/></svg>",
        poly.trim_end()
    )
}

/// `<picture>` with the narrow chart for phones and the wide one otherwise.
fn picture(base: &str, alt: &str, wide: (u32, u32), narrow: (u32, u32)) -> String {
    format!(
        "<picture><source media=\"(max-width: 640px)\" srcset=\"img/{base}-narrow.svg\" width=\"{}\" height=\"{}\">\
         <img src=\"img/{base}.svg\" width=\"{}\" height=\"{}\" alt=\"{}\"></picture>",
        narrow.0,
        narrow.1,
        wide.0,
        wide.1,
        esc(alt)
    )
}

/// Wide charts of the pages, and their narrow twins.
const RECENT_WIDE: (u32, u32) = (960, 420);
const DIST_WIDE: (u32, u32) = (960, 360);
const FULL_WIDE: (u32, u32) = (960, 340);
const NARROW: (u32, u32) = charts::NARROW;

/// The verdict word of a stake, as curl's page writes it.
fn stake_words(verdict: &str) -> (&'static str, &'static str) {
    match verdict {
        "better" => ("current results are BETTER", "better"),
        "worse" => ("current results are worse", "worse"),
        _ => ("current results equal the stake", "none"),
    }
}

/// The page of one test and its charts: `NAME.html` and `img/NAME-*.svg`.
pub fn page(p: &Page<'_>, site: &Site<'_>) -> anyhow::Result<Vec<File>> {
    let t = p.test;
    let unit = &t.unit();
    let n = p.rows.len();
    let mut files: Vec<File> = Vec::new();
    let cp_markers = charts::change_point_markers(p.rows, &p.change_points);

    // Charts: the last 100 commits, the distribution, the full range in 20 points.
    let recent_from = n.saturating_sub(RECENT);
    let recent_rows = &p.rows[recent_from..];
    let recent_markers: Vec<plot::Marker> = cp_markers
        .iter()
        .filter(|m| m.index >= recent_from)
        .map(|m| plot::Marker {
            index: m.index - recent_from,
            ..m.clone()
        })
        .collect();
    let recent_title = format!(
        "{}: the most recent {} commit{}",
        t.name,
        recent_rows.len(),
        if recent_rows.len() == 1 { "" } else { "s" }
    );
    for (suffix, size) in [("", RECENT_WIDE), ("-narrow", NARROW)] {
        let mut c =
            charts::commit_chart(t, &recent_title, recent_rows, recent_markers.clone(), size);
        c.boxes.clear();
        files.push((
            format!("img/{}-recent{suffix}.svg", t.name),
            plot::svg(&c)?.into_bytes(),
        ));
        let d = charts::distribution_chart(
            t,
            &format!("{}: distribution of all runs", t.name),
            p.rows,
            &p.change_points,
            if size.0 >= 800 { 5 } else { 2 },
            if suffix.is_empty() { DIST_WIDE } else { NARROW },
        );
        files.push((
            format!("img/{}-distribution{suffix}.svg", t.name),
            plot::svg(&d)?.into_bytes(),
        ));
        let f = charts::full_range_chart(
            t,
            &format!("{}: full range, {} points", t.name, FULL_RANGE_POINTS),
            p.rows,
            cp_markers.clone(),
            FULL_RANGE_POINTS,
            if suffix.is_empty() { FULL_WIDE } else { NARROW },
        );
        files.push((
            format!("img/{}-full{suffix}.svg", t.name),
            plot::svg(&f)?.into_bytes(),
        ));
    }

    let summary = summarize(t, p.rows);
    let mut o = String::new();
    head(&mut o, &format!("{} — perfbisect", t.name));
    let _ = writeln!(o, "<nav><a href=\"index.html\">← all tests</a></nav>");
    match &t.description {
        Some(d) => {
            let _ = writeln!(
                o,
                "<h1>{} <span class=\"none\">({})</span></h1>",
                esc(d),
                esc(&t.name)
            );
        }
        None => {
            let _ = writeln!(o, "<h1>{}</h1>", esc(&t.name));
        }
    }
    let _ = writeln!(
        o,
        "<p class=\"meta\">{} is better{}; metric <code>{}</code>; {}</p>",
        t.direction.as_str(),
        if unit.is_empty() {
            String::new()
        } else {
            format!(", {}", esc(unit))
        },
        esc(&t.metric.describe()),
        esc(&p.scope)
    );
    if let Some(p) = super::provenance::Provenance::of(p.rows).sentence() {
        let _ = writeln!(o, "<p class=\"meta\">{}</p>", esc(&p));
    }
    o.push_str("<div class=\"cards\">\n");
    summary_cards(&mut o, t, summary.as_ref());
    o.push_str("</div>\n");

    let _ = writeln!(o, "<h2>Most recent {} commits</h2>", recent_rows.len());
    let _ = writeln!(
        o,
        "<figure>{}<figcaption>Per commit the median and the min–max band of its runs; dashed lines: change points; crosses: no result (build or runs failed).</figcaption></figure>",
        picture(&format!("{}-recent", t.name), &recent_title, RECENT_WIDE, NARROW)
    );
    let _ = writeln!(o, "<h2>Data distribution</h2>");
    let _ = writeln!(
        o,
        "<figure>{}<figcaption>Box plots of every run: the levels between change points (newest last) and the whole range. Boxes P25–P75, line the median, whiskers 1.5 IQR, dots beyond.</figcaption></figure>",
        picture(&format!("{}-distribution", t.name), "distribution of the runs", DIST_WIDE, NARROW)
    );
    let _ = writeln!(o, "<h2>Full range</h2>");
    let _ = writeln!(
        o,
        "<figure>{}<figcaption>The medians of all {n} commits down-sampled to {FULL_RANGE_POINTS} points (Largest-Triangle-Three-Buckets keeps peaks and steps).</figcaption></figure>",
        picture(&format!("{}-full", t.name), "full range", FULL_WIDE, NARROW)
    );

    change_point_table(&mut o, p);
    commit_table(&mut o, p, recent_from);
    o.push_str(&p.earlier_eras);
    config_section(&mut o, t, site.build);
    foot(
        &mut o,
        site,
        &summary
            .as_ref()
            .map(|s| {
                format!(
                    " from {} of {}",
                    crate::base::text::count(s.samples, "run"),
                    crate::base::text::count(s.commits_measured, "commit")
                )
            })
            .unwrap_or_default(),
    );
    files.push((format!("{}.html", t.name), o.into_bytes()));
    Ok(files)
}

fn summary_cards(o: &mut String, t: &Test, s: Option<&RangeSummary>) {
    let unit = &t.unit();
    let Some(s) = s else {
        o.push_str("<div class=\"card\"><h2>Summary</h2><p>No runs stored for these commits yet.</p></div>\n");
        return;
    };
    let with_si = |v: f64| {
        let q = quantity(v, unit);
        let plain = format!(
            "{}{}",
            fmt_num(v),
            if unit.is_empty() {
                String::new()
            } else {
                format!(" {unit}")
            }
        );
        if q == plain {
            esc(&plain)
        } else {
            format!(
                "{} <span class=\"none\">({})</span>",
                esc(&fmt_num(v)),
                esc(&q)
            )
        }
    };
    let _ = writeln!(
        o,
        "<div class=\"card\"><h2>Summary</h2><table class=\"kv\">\
         <tr><td class=\"l\">runs</td><td class=\"l\">{} over {} commits</td></tr>\
         <tr><td class=\"l\">P0</td><td class=\"l\">{}</td></tr>\
         <tr><td class=\"l\">P25</td><td class=\"l\">{}</td></tr>\
         <tr><td class=\"l\">P50</td><td class=\"l\">{}</td></tr>\
         <tr><td class=\"l\">P75</td><td class=\"l\">{}</td></tr>\
         <tr><td class=\"l\">P100</td><td class=\"l\">{}</td></tr>\
         <tr><td class=\"l\">mean</td><td class=\"l\">{}</td></tr>\
         <tr><td class=\"l\">std dev</td><td class=\"l\">{}, {:.2} % of mean</td></tr>\
         <tr><td class=\"l\">span</td><td class=\"l\">{}, {:.2} % of mean</td></tr>\
         </table></div>",
        s.samples,
        s.commits_measured,
        with_si(s.p0),
        with_si(s.p25),
        with_si(s.p50),
        with_si(s.p75),
        with_si(s.p100),
        with_si(s.mean),
        with_si(s.std_dev),
        s.std_dev_pct,
        with_si(s.span),
        if s.mean != 0.0 {
            s.span / s.mean.abs() * 100.0
        } else {
            0.0
        },
    );
    match &s.stake {
        Some(k) => {
            let (words, class) = stake_words(k.verdict);
            let _ = writeln!(
                o,
                "<div class=\"card\"><h2>Stake</h2><p>{} <span class=\"none\">(a set typical value of this test)</span></p>\
                 <p>{} ({:+.2} %) from the mean<br>{} ({:+.2} %) from P50</p>\
                 <p>newest median {}: <b class=\"{class}\">{words}</b></p></div>",
                esc(&quantity(k.stake, unit)),
                esc(&signed_quantity(k.vs_mean, unit)),
                k.vs_mean_pct,
                esc(&signed_quantity(k.vs_p50, unit)),
                k.vs_p50_pct,
                esc(&quantity(k.current, unit)),
            );
        }
        None => {
            o.push_str("<div class=\"card\"><h2>Stake</h2><p>No stake set: add <code>stake = VALUE</code> to the test's configuration to hold results against a typical value.</p></div>\n");
        }
    }
    match &s.trend {
        Some(tr) => {
            // Medians taken at different times: a trend holds the machine's moves too, and
            // is no decided step (those colour the page).
            let (word, class) = match tr.verdict {
                "none" => ("no trend (not significant)", "none"),
                "better" => (
                    "a trend towards better (significant); not a decided step",
                    "none",
                ),
                _ => (
                    "a trend towards worse (significant); not a decided step",
                    "none",
                ),
            };
            let _ = writeln!(
                o,
                "<div class=\"card\"><h2>Trend</h2><p>Mann-Kendall over the medians of {} measured commits says: <b class=\"{class}\">{word}</b> (p = {:.3}; significant below 0.05)</p>\
                 <p>Sen's slope: {} per measured commit ({:+.3} % of the median)</p></div>",
                tr.commits,
                tr.p_value,
                esc(&signed_quantity(tr.sen_slope, unit)),
                tr.sen_slope_pct
            );
        }
        None => {
            o.push_str("<div class=\"card\"><h2>Trend</h2><p>Fewer than 3 measured commits: no trend yet.</p></div>\n");
        }
    }
}

fn change_point_table(o: &mut String, p: &Page<'_>) {
    let _ = writeln!(o, "<h2>Change points</h2>");
    if p.change_points.is_empty() {
        let _ = writeln!(
            o,
            "<p>None decided: <code>perfbisect detect</code> finds no shift of level these commits' runs decide.</p>"
        );
    } else {
        o.push_str("<table><tr><th class=\"l\">first commit of the new level</th><th class=\"l\">before → after</th><th>change</th><th class=\"l\">evidence</th><th class=\"l wide\">subject</th></tr>\n");
        for cp in &p.change_points {
            let Some(r) = p.rows.get(cp.index) else {
                continue;
            };
            let (before, after) =
                super::units::level_pair(cp.before, cp.after, &p.test.unit(), cp.deterministic);
            let _ = writeln!(
                o,
                "<tr><td class=\"l\"><a class=\"hash\" href=\"#c-{}\">{}</a>{}</td><td class=\"l wrap\">{} → {}</td><td class=\"{}\">{}</td><td class=\"l wrap\">{}</td><td class=\"l subject wide\">{}</td></tr>",
                r.commit.short(),
                r.commit.short(),
                span_html(p, cp.last_before, cp.index),
                esc(&before),
                esc(&after),
                if super::find::judge(p.test.direction, cp.rel_change) == "regression" {
                    "worse"
                } else {
                    "better"
                },
                crate::base::text::fmt_rel(cp.rel_change, 2),
                if cp.deterministic {
                    super::steps::exact_evidence(cp, cp.last_before + 1 < cp.index)
                } else {
                    esc(&format!("{} ({})", crate::base::text::fmt_p(cp.p_value), cp.test.name()))
                },
                esc(&r.commit.subject)
            );
        }
        o.push_str("</table>\n");
    }
    undecided_table(o, p);
    for (at, w) in &p.why {
        why_card(o, p, *at, w);
    }
}

/// " (after <hash>; 3 between not measured)" where commits between the last measured at the
/// old level and the first at the new were not measured.
fn span_html(p: &Page<'_>, last: usize, first: usize) -> String {
    let n = p
        .unmeasured
        .get(&first)
        .copied()
        .unwrap_or(first.saturating_sub(last + 1));
    let measured = crate::pipeline::rows::measured_between(p.rows, last, first).min(n);
    match p.rows.get(last) {
        Some(r) if n > 0 => {
            let hash = format!("<span class=\"hash\">{}</span>", esc(&r.commit.short()));
            let text = crate::report::steps::span_short(&hash, n - measured, measured);
            let text = text.trim().trim_start_matches('(').trim_end_matches(')');
            format!("<br><span class=\"none\">{text}</span>")
        }
        _ => String::new(),
    }
}

/// The steps the runs show but do not decide, uncoloured: no claim is made of them.
fn undecided_table(o: &mut String, p: &Page<'_>) {
    if p.undecided.is_empty() {
        return;
    }
    // A move only across named machines is the machines' difference: triage leaves it alone.
    let searched = if p
        .undecided
        .iter()
        .any(|u| u.why == crate::stats::changepoint::Reason::Machines)
    {
        "<code>perfbisect triage</code> searches those a commit may explain (not a move only across machines), and <code>find</code>'s interleaved re-runs decide."
    } else {
        "<code>perfbisect triage</code> searches them, and <code>find</code>'s interleaved re-runs decide."
    };
    let _ = writeln!(
        o,
        "<h2>Undecided</h2><p class=\"meta\">Steps the stored runs show but do not decide: no claim is made of them. {searched}</p>"
    );
    o.push_str("<table><tr><th class=\"l\">first commit of the new level</th><th class=\"l\">before → after</th><th>change</th><th class=\"l\">why undecided</th><th class=\"l wide\">subject</th></tr>\n");
    for u in &p.undecided {
        let Some(r) = p.rows.get(u.index) else {
            continue;
        };
        let (before, after) = quantity_pair(u.before, u.after, &p.test.unit());
        let _ = writeln!(
            o,
            "<tr><td class=\"l\"><a class=\"hash\" href=\"#c-{}\">{}</a>{}</td><td class=\"l wrap\">{} → {}</td><td class=\"none\">{}</td><td class=\"l wrap\">{}</td><td class=\"l subject wide\">{}</td></tr>",
            r.commit.short(),
            r.commit.short(),
            span_html(p, u.last_before, u.index),
            esc(&before),
            esc(&after),
            crate::base::text::fmt_rel(u.rel_change, 2),
            esc(&super::steps::undecided_reason(u)),
            esc(&r.commit.subject)
        );
    }
    o.push_str("</table>\n");
}

/// A small bar chart of the functions whose instructions changed most at a change point.
fn why_card(o: &mut String, p: &Page<'_>, at: usize, w: &crate::pipeline::profile::Why) {
    let Some(r) = p.rows.get(at) else { return };
    // A step not in the code's work: the functions' small moves are the run's noise, as
    // `find` and the report say.
    if super::why::flat(w) {
        let line = super::why::flat_line(w);
        let mut chars = line.chars();
        let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
        let _ = writeln!(
            o,
            "<div class=\"card why\"><h2>Why {} moved</h2><p>{}.</p></div>",
            esc(&r.commit.short()),
            esc(&format!("{}{}", first.unwrap_or_default(), chars.as_str()))
        );
        return;
    }
    let _ = writeln!(
        o,
        "<div class=\"card why\"><h2>Why {} moved</h2><p>Instructions per function under Cachegrind, one run each of <span class=\"hash\">{}</span> and <span class=\"hash\">{}</span> ({} → {}).</p>",
        esc(&r.commit.short()),
        esc(&w.parent[..10.min(w.parent.len())]),
        esc(&w.culprit[..10.min(w.culprit.len())]),
        w.total_before,
        w.total_after
    );
    let most = w
        .changes
        .iter()
        .map(|c| c.delta.unsigned_abs())
        .max()
        .unwrap_or(1)
        .max(1);
    o.push_str("<table class=\"bars\">\n");
    for c in &w.changes {
        let width = (c.delta.unsigned_abs() as f64 / most as f64 * 100.0).max(1.0);
        let worse = match p.test.direction {
            crate::config::Direction::Lower => c.delta > 0,
            crate::config::Direction::Higher => c.delta < 0,
        };
        let place = match (c.file.as_str(), c.line) {
            ("???" | "", _) => String::new(),
            (f, Some(l)) => format!("{f}:{l}"),
            (f, None) => f.to_string(),
        };
        let _ = writeln!(
            o,
            "<tr><td class=\"l\"><code>{}</code> <span class=\"none\">{}</span></td><td class=\"l barcell\"><div class=\"bar {}\" style=\"width:{width:.1}%\"></div></td><td>{:+} ({:+.2} %)</td></tr>",
            esc(&c.function),
            esc(&place),
            if worse { "worse" } else { "better" },
            c.delta,
            c.pct_of_total
        );
    }
    o.push_str("</table>");
    if let Some(e) = w.explained {
        let _ = write!(
            o,
            "<p>The functions listed add up to {:.0} % of the change. Profiles: <code>{}</code>, <code>{}</code> (<code>cg_annotate</code>, <code>cg_diff</code>).</p>",
            e * 100.0,
            esc(&w.parent_profile),
            esc(&w.culprit_profile)
        );
    }
    o.push_str("</div>\n");
}

fn commit_table(o: &mut String, p: &Page<'_>, recent_from: usize) {
    let cps: Vec<usize> = p.change_points.iter().map(|c| c.index).collect();
    // The recent commits, newest first, and any older commit a change point links to.
    let mut shown: Vec<usize> = (recent_from..p.rows.len()).rev().collect();
    let mut older: Vec<usize> = cps.iter().copied().filter(|&i| i < recent_from).collect();
    older.sort_unstable_by(|a, b| b.cmp(a));
    shown.extend(older);
    let _ = writeln!(
        o,
        "<h2>Commits</h2><p class=\"meta\">The most recent {}, newest first{}; highlighted: change points.</p>",
        p.rows.len() - recent_from,
        if cps.iter().any(|&i| i < recent_from) {
            ", then older change points"
        } else {
            ""
        }
    );
    o.push_str("<table><tr><th class=\"l\">commit</th><th>runs</th><th>median</th><th class=\"wide\">min</th><th class=\"wide\">max</th><th class=\"l wide\">subject</th></tr>\n");
    for i in shown {
        let r = &p.rows[i];
        let class = if cps.contains(&i) {
            " class=\"cp\""
        } else {
            ""
        };
        let cells = match stats::summarize(&r.values) {
            Some(s) => format!(
                "<td>{}</td><td>{}</td><td class=\"wide\">{}</td><td class=\"wide\">{}</td>",
                s.n,
                esc(&quantity(s.median, &p.test.unit())),
                esc(&quantity(s.min, &p.test.unit())),
                esc(&quantity(s.max, &p.test.unit())),
            ),
            None => format!(
                "<td>0</td><td>{}</td><td class=\"wide\"></td><td class=\"wide\"></td>",
                match r.status {
                    Status::BuildFailed => "build failed",
                    Status::RunFailed => "runs failed",
                    _ => "not measured",
                }
            ),
        };
        let _ = writeln!(
            o,
            "<tr id=\"c-{}\"{class}><td class=\"l hash\" title=\"{}\">{}</td>{cells}<td class=\"l subject wide\">{}</td></tr>",
            r.commit.short(),
            r.commit.id,
            r.commit.short(),
            esc(&r.commit.subject)
                + &r
                    .same_build_as
                    .map(|b| format!(
                        " <span class=\"none\">(same build as {})</span>",
                        crate::git::short(&b)
                    ))
                    .unwrap_or_default()
        );
    }
    o.push_str("</table>\n");
}

fn config_section(o: &mut String, t: &Test, b: &Build) {
    let _ = writeln!(
        o,
        "<h2>Build and test configuration</h2>\n<div class=\"card\"><dl>"
    );
    let mut row = |k: &str, v: String| {
        let _ = writeln!(o, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    };
    row(
        "build",
        b.command
            .as_deref()
            .map(|c| format!("<code>{}</code>", esc(c)))
            .unwrap_or_else(|| "none (artifacts copied as checked out)".into()),
    );
    row(
        "artifacts",
        b.artifacts
            .iter()
            .map(|a| format!("<code>{}</code>", esc(a)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    if !b.env.is_empty() {
        row(
            "build environment",
            b.env
                .iter()
                .map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v)))
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    row(
        "build timeout",
        esc(&humantime::format_duration(b.timeout).to_string()),
    );
    row("test command", format!("<code>{}</code>", esc(&t.command)));
    if let Some(s) = &t.setup {
        row("setup", format!("<code>{}</code>", esc(s)));
    }
    if let Some(s) = &t.teardown {
        row("teardown", format!("<code>{}</code>", esc(s)));
    }
    row(
        "metric",
        format!("<code>{}</code>", esc(&t.metric.describe())),
    );
    row(
        "runs",
        if t.deterministic {
            "deterministic: one run per commit".into()
        } else {
            format!(
                "{} per commit{}, up to {} when in doubt",
                t.repeats,
                if t.warmup > 0 {
                    format!(" after {} warm-up", t.warmup)
                } else {
                    String::new()
                },
                t.max_repeats
            )
        },
    );
    row(
        "threshold",
        esc(&match t.threshold {
            stats::Threshold::Relative(r) => format!("{} %", fmt_num(r * 100.0)),
            stats::Threshold::Absolute(a) => quantity(a, &t.unit()),
        }),
    );
    row("α", fmt_num(t.alpha));
    row(
        "run timeout",
        esc(&humantime::format_duration(t.timeout).to_string()),
    );
    o.push_str("</dl></div>\n");
}

/// How many steps of a test detect decided (regressions, improvements) and left undecided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Steps {
    pub regressions: usize,
    pub improvements: usize,
    pub undecided: usize,
}

impl Steps {
    /// The steps of `d` for a test whose better direction is `direction`.
    pub fn of(d: &crate::stats::Detection, direction: crate::config::Direction) -> Steps {
        let regressions = d
            .points
            .iter()
            .filter(|c| super::find::judge(direction, c.rel_change) == "regression")
            .count();
        Steps {
            regressions,
            improvements: d.points.len() - regressions,
            undecided: d.undecided.len(),
        }
    }

    /// "1 regression decided, 2 steps undecided", and the class that colours it: by decided
    /// steps only.
    fn words(&self) -> (String, &'static str) {
        let count =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        if self.regressions > 0 {
            parts.push(count(self.regressions, "regression", "regressions"));
        }
        if self.improvements > 0 {
            parts.push(count(self.improvements, "improvement", "improvements"));
        }
        let decided = if parts.is_empty() {
            "no step decided".to_string()
        } else {
            format!("{} decided", parts.join(", "))
        };
        let text = match self.undecided {
            0 => decided,
            n => format!("{decided}, {} undecided", count(n, "step", "steps")),
        };
        let class = if self.regressions > 0 {
            "worse"
        } else if self.improvements > 0 {
            "better"
        } else {
            "none"
        };
        (text, class)
    }
}

/// One test on the index.
pub struct IndexEntry<'a> {
    pub test: &'a Test,
    /// detect's steps over the commits.
    pub steps: Steps,
    /// Per-commit medians, oldest first (NaN: none).
    pub medians: Vec<f64>,
    pub summary: Option<RangeSummary>,
    /// Whether `NAME.html` exists in the site.
    pub has_page: bool,
}

impl<'a> IndexEntry<'a> {
    /// The index entry of a test over `rows`.
    pub fn new(test: &'a Test, rows: &[CommitRow], steps: Steps, has_page: bool) -> IndexEntry<'a> {
        IndexEntry {
            test,
            steps,
            medians: rows
                .iter()
                .map(|r| stats::median(&r.values).unwrap_or(f64::NAN))
                .collect(),
            summary: summarize(test, rows),
            has_page,
        }
    }
}

/// `index.html`: every test as a card.
pub fn index(entries: &[IndexEntry<'_>], site: &Site<'_>) -> String {
    let mut o = String::new();
    head(&mut o, &format!("{} performance — perfbisect", site.name));
    let _ = writeln!(o, "<h1>{} performance</h1>", esc(&site.name));
    let _ = writeln!(
        o,
        "<p class=\"meta\">{} test{}. Per test: the newest commit's median, the stake verdict, the trend over the commits (Mann-Kendall, p &lt; 0.05) and the medians, oldest first.</p>",
        entries.len(),
        if entries.len() == 1 { "" } else { "s" }
    );
    o.push_str("<div class=\"cards\">\n");
    for e in entries {
        let t = e.test;
        let (open, close) = if e.has_page {
            (
                format!("<a class=\"card\" href=\"{}.html\">", esc(&t.name)),
                "</a>",
            )
        } else {
            ("<div class=\"card\">".to_string(), "</div>")
        };
        let latest = e.medians.iter().rev().find(|v| v.is_finite()).copied();
        // The trend of medians taken at different times holds the machine's moves as well
        // as the commits': shown, never coloured (the decided steps colour a test).
        let (arrow, arrow_class, arrow_title) =
            match e.summary.as_ref().and_then(|s| s.trend.as_ref()) {
                Some(tr) if tr.verdict != "none" => (
                    if tr.sen_slope > 0.0 { "↗" } else { "↘" },
                    "none",
                    format!(
                        "trend of the commit medians: {} (p = {:.4}); no step is decided by it",
                        if tr.sen_slope > 0.0 {
                            "rising"
                        } else {
                            "falling"
                        },
                        tr.p_value
                    ),
                ),
                Some(tr) => (
                    "→",
                    "none",
                    format!("no significant trend (p = {:.4})", tr.p_value),
                ),
                None => ("·", "none", "too few commits for a trend".into()),
            };
        let (steps, steps_class) = e.steps.words();
        let stake = match e.summary.as_ref().and_then(|s| s.stake.as_ref()) {
            Some(k) => {
                let (_, class) = stake_words(k.verdict);
                format!(
                    "stake {}: <b class=\"{class}\">{}</b> ({:+.2} %)",
                    esc(&quantity(k.stake, &t.unit())),
                    match k.verdict {
                        "better" => "BETTER",
                        "worse" => "worse",
                        _ => "equal",
                    },
                    crate::stats::rel_change(k.stake, k.current) * 100.0
                )
            }
            None => "no stake".into(),
        };
        let _ = writeln!(
            o,
            "{open}<div class=\"name\">{}</div><div class=\"desc\">{}</div>\
             <div><span class=\"big\">{}</span> <span class=\"arrow {arrow_class}\" title=\"{}\">{arrow}</span></div>\
             <div class=\"desc\">{stake}; <b class=\"{steps_class}\">{steps}</b></div>{}{close}",
            esc(&t.name),
            esc(t.description.as_deref().unwrap_or(&format!(
                "{} is better",
                t.direction.as_str()
            ))),
            latest
                .map(|v| esc(&quantity(v, &t.unit())))
                .unwrap_or_else(|| "no results".into()),
            esc(&arrow_title),
            spark_svg(&e.medians),
        );
    }
    o.push_str("</div>\n");
    foot(&mut o, site, "");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn sparklines_scale_into_the_box() {
        let s = spark_svg(&[1.0, 2.0, f64::NAN, 3.0]);
        assert!(s.contains("points=\"0.0,34.0 66.7,18.0 200.0,2.0\""), "{s}");
        assert_eq!(spark_svg(&[1.0]), "");
    }
}
