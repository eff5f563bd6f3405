//! Reports: snapshots of the Markdown and of the SVG for fixed data, a PNG decoded back, and
//! the real binary's `report`, `find --plot`, exports and errors on a generated repository.
//!
//! `UPDATE_SNAPSHOTS=1 cargo test --test suite report::` rewrites the snapshots in tests/snapshots/
//! after a deliberate change; look at the diff (and the pictures) before committing it.

use crate::common;

use std::path::{Path, PathBuf};

use common::{specs, Fixture};
use perfbisect::bisect::{Culprit, Outcome};
use perfbisect::git::CommitInfo;
use perfbisect::pipeline::rows::{CommitRow, Status};
use perfbisect::report::find::{FindReport, TimeSpent};
use perfbisect::report::issue::{self, Issue, Measured};
use perfbisect::report::plot::{self, BoxGroup, Chart, Marker, MarkerKind, PlotCommit, Style};
use perfbisect::store::Sample;

const CONFIG: &str = r#"
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "bytes"
threshold = "2%"
repeats = 5
stake = 1000
description = "The number the program prints"
"#;

fn snapshot(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_SNAPSHOTS=1 to create it",
            path.display()
        )
    });
    if want != got {
        let out = std::env::temp_dir().join(format!("perfbisect-snapshot-{name}"));
        std::fs::write(&out, got).unwrap();
        panic!(
            "{name} differs from {} (new output in {}; UPDATE_SNAPSHOTS=1 accepts it)",
            path.display(),
            out.display()
        );
    }
}

fn test_def() -> perfbisect::config::Test {
    let cfg = perfbisect::config::parse(CONFIG, Path::new("/tmp/perfbisect.toml")).unwrap();
    cfg.test("value").unwrap().clone()
}

/// Twelve commits with fixed ids, subjects and samples; a step of +4 % at commit 8, commit 4
/// does not build.
fn fixed_rows() -> Vec<CommitRow> {
    (0..12u8)
        .map(|i| {
            let commit = CommitInfo {
                id: gix::ObjectId::from_bytes_or_panic(&[i * 17 + 3; 20]),
                subject: format!("Change {i} | with a pipe"),
                author: "Dev One <dev@example.com>".into(),
                time: 1_700_000_000 + i64::from(i) * 3600,
            };
            let level = if i >= 8 { 13_710_000.0 } else { 13_300_000.0 };
            let values: Vec<f64> = if i == 4 {
                Vec::new()
            } else {
                (0..5)
                    .map(|k| {
                        level * (1.0 + (f64::from(k) - 2.0) * 0.002 + f64::from(i % 3) * 0.001)
                    })
                    .collect()
            };
            let records: Vec<Sample> = values
                .iter()
                .enumerate()
                .map(|(k, v)| Sample {
                    commit: [i * 17 + 3; 20],
                    test_hash: 1,
                    recipe_hash: 2,
                    time: 1_700_100_000 + u64::from(i) * 60 + k as u64,
                    round: 0,
                    wall: 0.5,
                    user: 0.25,
                    sys: 0.125,
                    max_rss: 4096,
                    value: Some(*v),
                    error: None,
                    fingerprint: 0,
                    import: None,
                    window: 1,
                    moment: 0,
                })
                .collect();
            CommitRow {
                same_build_as: None,
                own: records.len(),
                joins_previous: false,
                commit,
                status: if i == 4 {
                    Status::BuildFailed
                } else {
                    Status::Ok
                },
                values,
                records,
            }
        })
        .collect()
}

fn fixed_chart(rows: &[CommitRow]) -> Chart {
    let t = test_def();
    perfbisect::report::charts::commit_chart(
        &t,
        "value: a..b",
        rows,
        vec![
            Marker {
                index: 8,
                label: rows[8].commit.id.to_hex_with_len(7).to_string(),
                kind: MarkerKind::Culprit,
            },
            Marker {
                index: 8,
                label: rows[8].commit.id.to_hex_with_len(7).to_string(),
                kind: MarkerKind::ChangePoint,
            },
        ],
        perfbisect::report::charts::WIDE,
    )
}

#[test]
fn markdown_report_snapshot() {
    let t = test_def();
    let rows = fixed_rows();
    let commits: Vec<CommitInfo> = rows.iter().map(|r| r.commit.clone()).collect();
    let outcome = Outcome::Culprits(vec![Culprit {
        pos: 8,
        parent: 7,
        candidates: vec![8],
        before: 13_300_000.0,
        after: 13_710_000.0,
        n_before: 10,
        n_after: 10,
        rel_change: 13_710_000.0 / 13_300_000.0 - 1.0,
        p_value: 2e-6,
        verified: true,
        reruns: 20,
        rerun_windows: 2,
        interval: None,
        windows: 0,
    }]);
    let cps = vec![perfbisect::stats::ChangePoint {
        index: 8,
        last_before: 7,
        before: 13_300_000.0,
        after: 13_710_000.0,
        rel_change: 0.0308,
        p_value: 1e-9,
        test: perfbisect::stats::step::StepTest::Levels,
        deterministic: false,
        interval: None,
        windows: 0,
    }];
    let skipped = vec![perfbisect::report::find::Skip {
        pos: 4,
        reason: "does not build\nerror: expected ';'".into(),
    }];
    let r = FindReport {
        imported: None,
        facts: &Default::default(),
        why: &[],
        test: &t,
        range: "a..b",
        commits: &commits,
        outcome: &outcome,
        probed: &[0, 11, 6, 9, 8, 7],
        notes: &[],
        builds: 6,
        runs: 40,
        reused: 0,
        replayed: None,
        time: TimeSpent {
            building: 3.0,
            measuring: 9.5,
            build_rounds: 6,
            most_parallel: 1,
            ..TimeSpent::default()
        },
        skipped: &skipped,
        searched: 11,
        invocation: "--repo /src/app ",
        merges: &[],
        seconds: 13.0,
        deterministic: false,
        sparkline: perfbisect::report::spark::medians_line(&rows, "bytes"),
        plot: Some("value plot.png".into()),
    };
    let measured = Measured {
        test_command: "./app".into(),
        metric: "regex:^value: ([0-9.]+)".into(),
        repeats: 5,
        warmup: 1,
        max_repeats: 30,
        threshold: "2 %".into(),
        alpha: 0.01,
        deterministic: false,
        build_command: Some("cc -O1 -o app app.c -lm".into()),
        artifacts: vec!["app".into()],
        machine: "Linux 6.1 x86_64, Test CPU, 2 cores".into(),
        perfbisect: "0.1.0".into(),
        runs: "commits compared are measured side by side, in interleaved rounds".into(),
    };
    let blocks: Vec<std::ops::Range<usize>> = std::iter::once(0..rows.len()).collect();
    let x = Issue {
        find: &r,
        rows: &rows,
        range_rows: &rows,
        blocks: &blocks,
        detection: &perfbisect::stats::Detection {
            points: cps.clone(),
            undecided: Vec::new(),
        },
        measured: &measured,
        known: &[],
    };
    let md = issue::markdown(&x);
    // What a reader of the issue needs, whatever the snapshot says.
    assert!(
        md.contains(
            "**value: +3.08 % (13.30 MB → 13.71 MB), p = 2.00e-6 (two-sided Mann-Whitney U), medians of all 10 vs 10 runs**"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "`▁▁▁▁▁▁▁████` medians of 11 measured of the old end and the range's 11 commits, oldest first; lowest 13.30 MB, highest 13.74 MB"
        ),
        "{md}"
    );
    assert!(md.contains("![value over a..b](value%20plot.png)"), "{md}");
    assert!(md.contains("| **culprit** | **`"), "{md}");
    assert!(
        md.contains("Change 8 \\| with a pipe"),
        "pipes escaped: {md}"
    );
    assert!(
        md.contains("- skipped `4747474747` Change 4 \\| with a pipe: does not build"),
        "{md}"
    );
    assert!(
        md.contains("git bisect run perfbisect --repo /src/app step value"),
        "{md}"
    );
    assert!(md.contains("### How it was measured"), "{md}");
    snapshot("report.md", &md);

    // A change point `find` did not name is marked so, and the report says why the two differ.
    let mut two = cps.clone();
    two.push(perfbisect::stats::ChangePoint {
        index: 10,
        last_before: 9,
        before: 13_710_000.0,
        after: 13_740_000.0,
        rel_change: 0.0022,
        p_value: 1e-4,
        test: perfbisect::stats::step::StepTest::Levels,
        deterministic: false,
        interval: None,
        windows: 0,
    });
    let two = perfbisect::stats::Detection {
        points: two,
        undecided: Vec::new(),
    };
    let x = Issue {
        detection: &two,
        ..x
    };
    let md = issue::markdown(&x);
    assert!(
        md.contains(
            "| +3.08 % | p = 1.00e-9 (t test of the neighbouring segments' levels) | culprit |"
        ),
        "{md}"
    );
    assert!(md.contains("| not named |"), "{md}");
    assert!(
        md.contains(
            "`adadadadad` is not named by `find`: `find` names only steps it confirms on the commit and the one before it (by interleaved re-runs, or exact values)"
        ),
        "{md}"
    );
}

#[test]
fn svg_snapshot_and_png_decode_back() {
    let rows = fixed_rows();
    let chart = fixed_chart(&rows);
    let svg = plot::svg(&chart).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
    for text in [
        "value: a..b",
        "13.5 MB",
        "stake 1000 bytes ↓ (off this scale)",
        "before",
        "culprit",
    ] {
        assert!(svg.contains(text), "{text} missing from the SVG");
    }
    // The same data gives the same bytes.
    assert_eq!(svg, plot::svg(&chart).unwrap());
    snapshot("plot.svg", &svg);

    let png = plot::png(&chart).unwrap();
    assert_eq!(png, plot::png(&chart).unwrap(), "PNG output is not stable");
    let decoder = png::Decoder::new(std::io::Cursor::new(&png));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), perfbisect::report::charts::WIDE);
    let px = &buf[..info.buffer_size()];
    let pixel = |x: u32, y: u32| {
        let i = ((y * info.width + x) * 3) as usize;
        (px[i], px[i + 1], px[i + 2])
    };
    // Not blank: ink everywhere the chart draws, and the culprit's red line.
    let dark = (0..info.height)
        .flat_map(|y| (0..info.width).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let (r, g, b) = pixel(x, y);
            u32::from(r) + u32::from(g) + u32::from(b) < 300
        })
        .count();
    assert!(dark > 3000, "only {dark} dark pixels");
    let red = (0..info.height)
        .flat_map(|y| (0..info.width).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let (r, g, b) = pixel(x, y);
            r > 170 && g < 60 && b < 60
        })
        .count();
    assert!(
        red > 300,
        "the culprit marker is missing ({red} red pixels)"
    );
    // The title is drawn with the shipped font: ink in its top-left corner.
    let title_ink = (8..30)
        .flat_map(|y| (16..200).map(move |x| (x, y)))
        .filter(|&(x, y)| pixel(x, y).0 < 100)
        .count();
    assert!(title_ink > 100, "no title text ({title_ink} pixels)");
}

#[test]
fn plots_of_long_ranges_are_down_sampled_and_empty_ones_say_so() {
    let mut rows = Vec::new();
    for i in 0..3000u32 {
        let v = if i >= 2000 { 110.0 } else { 100.0 } + f64::from(i % 7) * 0.1;
        rows.push(PlotCommit {
            label: format!("{i:07x}"),
            values: vec![v, v + 0.5, v - 0.5],
            failed: i == 1500,
        });
    }
    let chart = Chart {
        title: "long".into(),
        subtitle: String::new(),
        unit: "s".into(),
        commits: rows,
        markers: vec![],
        stake: None,
        boxes: vec![BoxGroup {
            label: "all".into(),
            sub: String::new(),
            values: vec![1.0, 2.0],
            highlight: false,
        }],
        boxes_title: String::new(),
        style: Style::Band,
        width: 800,
        height: 400,
    };
    let svg = plot::svg(&chart).unwrap();
    assert!(svg.contains("down-sampled"), "the legend says so");
    // Far fewer drawn points than commits: the SVG stays small.
    assert!(svg.len() < 200_000, "{} bytes", svg.len());
    let empty = Chart {
        commits: vec![PlotCommit {
            label: "abc".into(),
            values: vec![],
            failed: true,
        }],
        boxes: vec![],
        ..chart
    };
    assert!(plot::svg(&empty)
        .unwrap()
        .contains("no measurements in this range"));
}

/// A fixture of 12 commits whose value rises 5 % at commit 8 (commit 4 does not build).
fn stepped() -> Fixture {
    Fixture::new(
        &specs(12, |i, c| {
            if i >= 8 {
                c.metric *= 1.05;
            }
            if i == 4 {
                c.broken = true;
            }
        }),
        CONFIG,
    )
}

fn decode_png(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let distinct: std::collections::HashSet<&[u8]> = buf[..info.buffer_size()].chunks(3).collect();
    assert!(
        distinct.len() > 20,
        "a blank picture: {} colours",
        distinct.len()
    );
    (info.width, info.height)
}

#[test]
fn find_draws_its_range_and_prints_a_sparkline() {
    let f = stepped();
    let png = f.dir.path().join("find.png");
    let out = f
        .cmd()
        .args(["find", "value", &f.range(), "--plot"])
        .arg(&png)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("culprit: {}", &f.ids[7][..10])),
        "{text}"
    );
    let spark = text
        .lines()
        .find(|l| l.starts_with(['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█']))
        .unwrap_or_else(|| panic!("no sparkline: {text}"));
    assert!(
        spark.starts_with(['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█']),
        "{spark}"
    );
    assert!(spark.contains("bytes"), "{spark}");
    assert_eq!(decode_png(&png), perfbisect::report::charts::WIDE);

    // The Markdown has the same sparkline, as code, and the plot by the path given.
    let md = f
        .cmd()
        .args(["find", "value", &f.range(), "--format", "md", "--plot"])
        .arg(&png)
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("medians of") && md.contains("` medians of"),
        "{md}"
    );
    assert!(md.contains(&format!("]({})", png.display())), "{md}");
}

#[test]
fn report_markdown_and_json_on_a_real_repository() {
    let f = stepped();
    f.run_json("value", &f.range(), &[]);
    let out_dir = f.dir.path().join("issue");
    let out = f
        .cmd()
        .args(["report", "value", &f.range(), "--out"])
        .arg(&out_dir)
        .args(["--plot", "ignored/dir/value.svg"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The plot lands beside the Markdown, which names it by a relative path.
    let md = std::fs::read_to_string(out_dir.join("value.md")).unwrap();
    assert!(out_dir.join("value.svg").is_file());
    assert!(md.contains("](value.svg)"), "{md}");
    let culprit = &f.ids[7][..10];
    assert!(
        md.starts_with(&format!("## `value`: regression at `{culprit}` Commit 8")),
        "{md}"
    );
    assert!(
        md.contains("**value: +4.") || md.contains("**value: +5."),
        "{md}"
    );
    assert!(
        md.contains(&format!("| **culprit** | **`{culprit}`** | Commit 8 |")),
        "{md}"
    );
    assert!(
        md.contains("| 0 | does not build |") || !md.contains("Commit 4 |"),
        "{md}"
    );
    assert!(
        md.contains(&format!("| `{culprit}` | Commit 8 |")),
        "detect's change point: {md}"
    );
    assert!(md.contains("- build: `cc -O1 -o app app.c -lm`"), "{md}");
    // Public text: the config by its file name (the reader's copy), no path of this machine's.
    assert!(
        md.contains("git bisect run perfbisect --config perfbisect.toml "),
        "{md}"
    );

    let j = f.json(&["report", "value", &f.range(), "--format", "json"]);
    assert_eq!(j["find"]["verdict"], "culprit", "{j}");
    assert_eq!(j["change_points"][0]["commit"], f.ids[7], "{j}");
    assert!(j["sparkline"].as_str().unwrap().contains("medians of"));
    assert_eq!(j["measured"]["repeats"], 5);
    let samples = j["samples"].as_array().unwrap();
    let runs: u64 = j["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["n"].as_u64().unwrap())
        .sum();
    assert_eq!(samples.len() as u64, runs, "every sample is exported");
    for s in samples {
        for key in [
            "commit",
            "test",
            "unit",
            "round",
            "time",
            "timestamp",
            "value",
            "fingerprint",
        ] {
            assert!(s.get(key).is_some(), "{key} missing in {s}");
        }
        assert_eq!(s["test"], "value");
        assert_eq!(s["unit"], "bytes");
    }
}

/// A build recipe of several lines is shown as it is written, in a fenced block that pastes
/// into a shell (flattened onto one line, `./configure ... make` would not run).
#[test]
fn a_multi_line_build_recipe_is_a_block_in_the_markdown() {
    let f = Fixture::new(
        &specs(2, |_, _| {}),
        &CONFIG.replace(
            "command = \"cc -O1 -o app app.c -lm\"",
            "command = \"\"\"\ncc -O1 -c app.c\ncc -o app app.o -lm\n\"\"\"",
        ),
    );
    let out = f
        .cmd()
        .args(["report", "value", &f.range(), "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        md.contains("- build, artifacts `app`:\n\n  ```sh\n  cc -O1 -c app.c\n  cc -o app app.o -lm\n  ```\n"),
        "{md}"
    );
}

/// `show A..B` lists the old end `A` first, marked, as `report` does (`find` measures it):
/// in the text, as the first entry of the JSON `commits` (`"old_end": true`), and in the CSV.
#[test]
fn show_lists_the_old_end_of_a_range_first_and_marks_it() {
    let f = Fixture::new(&specs(3, |_, _| {}), CONFIG);
    let range = format!("{}..{}", f.ids[0], f.ids[2]);
    f.run_json("value", &f.ids[0], &[]);
    f.run_json("value", &range, &[]);
    let j = f.json(&["show", "value", &range, "--format", "json"]);
    let commits = j["commits"].as_array().unwrap();
    assert_eq!(
        commits.len(),
        3,
        "the old end and the range's 2 commits: {j}"
    );
    assert_eq!(commits[0]["commit"], f.ids[0], "{j}");
    assert_eq!(commits[0]["old_end"], true, "{j}");
    assert_eq!(commits[0]["n"], 5, "its runs are shown: {j}");
    assert!(commits[1].get("old_end").is_none(), "{j}");
    let old_samples = j["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["old_end"] == true)
        .inspect(|s| assert_eq!(s["commit"], f.ids[0], "{s}"))
        .count();
    assert_eq!(old_samples, 5, "{j}");
    // The same commits as report's chain.
    let text = f.cmd().args(["show", "value", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let first = text
        .lines()
        .find(|l| l.starts_with(&f.ids[0][..10]))
        .unwrap_or_else(|| panic!("no row of the old end: {text}"));
    assert!(first.ends_with("[old end]"), "{text}");
    assert!(text.contains("the old end and the 2 commits of"), "{text}");
    let out = f
        .cmd()
        .args(["show", "value", &range, "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 15, "{csv}");
    for r in &rows {
        assert_eq!(
            r.starts_with(&f.ids[0]),
            r.ends_with(",true"),
            "only the old end's runs are marked: {csv}"
        );
    }
    // A single revision is that commit alone.
    let one = f.json(&["show", "value", &f.ids[1], "--format", "json"]);
    assert_eq!(one["commits"].as_array().unwrap().len(), 1, "{one}");
}

#[test]
fn show_exports_every_sample_and_otavas_csv() {
    let f = stepped();
    let range = format!("{}..{}", f.ids[0], f.ids[5]);
    f.run_json("value", &range, &[]);
    let j = f.show("value", &range);
    let samples = j["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 4 * 5, "4 commits built, 5 runs each: {j}");
    assert_eq!(samples[0]["commit"], f.ids[1]);
    assert!(samples[0]["timestamp"].as_str().unwrap().ends_with('Z'));

    let out = f
        .cmd()
        .args(["show", "value", &range, "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8(out.stdout).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "commit,round,time,value,wall,user,sys,max_rss,error,test,unit,timestamp,fingerprint,window,moment,old_end"
    );
    assert_eq!(lines.count(), 20);

    let out = f
        .cmd()
        .args(["show", "value", &range, "--format", "otava"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "time,commit,value");
    assert_eq!(rows.len(), 1 + 4, "one row per measured commit: {csv}");
    let cells: Vec<&str> = rows[1].split(',').collect();
    assert!(
        cells[0].ends_with(" +0000") && cells[0].len() == 25,
        "{}",
        cells[0]
    );
    assert_eq!(cells[1], f.ids[1]);
    let v: f64 = cells[2].parse().unwrap();
    assert!((v - 1000.0).abs() < 50.0, "{v}");
    assert!(
        !csv.contains(&f.ids[3]),
        "the unbuildable commit has no row"
    );

    // All tests at once; an unknown one is named.
    let out = f
        .cmd()
        .args(["show", "all", &range, "--format", "otava"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("time,commit,value\n"));
    let out = f
        .cmd()
        .args(["show", "value,nope", &range, "--format", "otava"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
}

/// A stand-in `gh` that records its arguments and the body file, then answers as told.
fn fake_gh(dir: &Path, behaviour: &str) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$@" > "{log}/gh-args"
prev=
for a in "$@"; do
  if [ "$prev" = "--body-file" ]; then cp "$a" "{log}/gh-body"; fi
  prev=$a
done
{behaviour}
"#,
        log = dir.display()
    );
    let path = bin.join("gh");
    std::fs::write(&path, script).unwrap();
    let mut p = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    std::fs::set_permissions(&path, p).unwrap();
    bin
}

fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn attach_posts_the_markdown_with_gh_and_prints_the_url() {
    let f = stepped();
    f.run_json("value", &f.range(), &[]);
    let bin = fake_gh(
        f.dir.path(),
        "echo 'https://github.com/curl/curl/issues/1234#issuecomment-42'",
    );
    let out = f
        .cmd()
        .env("PATH", path_with(&bin))
        .args([
            "report",
            "value",
            &f.range(),
            "--attach",
            "curl/curl#1234",
            "--plot",
            "v.png",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "https://github.com/curl/curl/issues/1234#issuecomment-42\n"
    );
    let args = std::fs::read_to_string(f.dir.path().join("gh-args")).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(
        &args[..5],
        ["issue", "comment", "1234", "--repo", "curl/curl"]
    );
    assert_eq!(args[5], "--body-file");
    let body = std::fs::read_to_string(f.dir.path().join("gh-body")).unwrap();
    assert!(body.starts_with("## `value`: regression at"), "{body}");
    assert!(body.contains("](v.png)"), "{body}");
    // The saved Markdown and its plot sit side by side.
    let saved = Path::new(args[6]);
    assert!(saved.parent().unwrap().join("v.png").is_file());
    assert_eq!(std::fs::read_to_string(saved).unwrap(), body);

    // find --attach posts find's Markdown.
    let out = f
        .cmd()
        .env("PATH", path_with(&bin))
        .args(["find", "value", &f.range(), "--attach", "curl/curl#7"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = std::fs::read_to_string(f.dir.path().join("gh-body")).unwrap();
    assert!(body.starts_with("### `value`: +"), "{body}");
    assert!(body.contains("` medians of"), "{body}");
}

#[test]
fn attach_failures_say_why_and_where_the_markdown_is() {
    let f = stepped();
    f.run_json("value", &f.range(), &[]);
    // gh says no.
    let bin = fake_gh(f.dir.path(), "echo 'HTTP 404: Not Found (https://api.github.com/repos/x/y/issues/9/comments)' >&2; exit 1");
    let out = f
        .cmd()
        .env("PATH", path_with(&bin))
        .args(["report", "value", &f.range(), "--attach", "x/y#9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing printed as if posted");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HTTP 404: Not Found"), "{err}");
    assert!(err.contains("cannot post the report to x/y#9"), "{err}");
    let saved = err
        .split("saved as ")
        .nth(1)
        .and_then(|s| s.split(':').next())
        .map(str::trim)
        .unwrap_or_else(|| panic!("no saved path in: {err}"));
    assert!(
        std::fs::read_to_string(saved)
            .unwrap()
            .contains("## `value`"),
        "{saved}"
    );

    // No gh at all: a PATH without it.
    let empty = f.dir.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = f
        .cmd()
        .env("PATH", format!("{}:/usr/bin:/bin", empty.display()))
        .args(["report", "value", &f.range(), "--attach", "x/y#9"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if Path::new("/usr/bin/gh").exists() || Path::new("/bin/gh").exists() {
        eprintln!("a real gh is installed in /usr/bin: the missing-gh case is not checked");
    } else {
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("`gh`") && err.contains("not on PATH"), "{err}");
        assert!(err.contains("saved as "), "{err}");
    }

    // A malformed target is refused before anything runs.
    let out = f
        .cmd()
        .args(["report", "value", &f.range(), "--attach", "curl#12"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--attach curl#12"));
}

#[test]
fn bad_report_arguments_exit_2_naming_what_is_wrong() {
    let f = stepped();
    let site_dir = f.dir.path().join("mine");
    std::fs::create_dir_all(&site_dir).unwrap();
    std::fs::write(site_dir.join("notes.txt"), "mine").unwrap();
    let range = f.range();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "find".into(),
                "value".into(),
                range.clone(),
                "--plot".into(),
                "x.jpg".into(),
            ],
            "x.jpg",
        ),
        (
            vec![
                "show".into(),
                "value".into(),
                "--plot".into(),
                "x.gif".into(),
            ],
            "must end in .png or .svg",
        ),
        (
            vec!["report".into(), "all".into(), range.clone()],
            "report all",
        ),
        (vec!["report".into(), "value".into()], "needs a RANGE"),
        (
            vec![
                "report".into(),
                "all".into(),
                "--format".into(),
                "html".into(),
            ],
            "--out DIR",
        ),
        (
            vec![
                "report".into(),
                "all".into(),
                "--format".into(),
                "html".into(),
                "--out".into(),
                site_dir.display().to_string(),
            ],
            "not empty",
        ),
        (
            vec![
                "report".into(),
                "value".into(),
                range.clone(),
                "--format".into(),
                "text".into(),
            ],
            "invalid value 'text'",
        ),
        (
            vec![
                "report".into(),
                "value".into(),
                range.clone(),
                "--format".into(),
                "json".into(),
                "--attach".into(),
                "a/b#1".into(),
            ],
            "--format md",
        ),
    ];
    for (args, needle) in cases {
        let out = f.cmd().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(site_dir.join("notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_dir(&site_dir).unwrap().count(), 1);
    // Nothing was built for a refused command.
    assert!(!f.cache.join("artifacts").exists());
}

#[test]
fn markdown_reports_say_no_change_and_inconclusive_plainly() {
    let t = test_def();
    let rows = fixed_rows();
    let commits: Vec<CommitInfo> = rows.iter().map(|r| r.commit.clone()).collect();
    let measured = Measured {
        test_command: "./app".into(),
        metric: "wall".into(),
        repeats: 5,
        warmup: 0,
        max_repeats: 30,
        threshold: "2 %".into(),
        alpha: 0.01,
        deterministic: false,
        build_command: None,
        artifacts: vec![],
        machine: "m".into(),
        perfbisect: "0".into(),
        runs: "commits compared are measured side by side, in interleaved rounds".into(),
    };
    let blocks: Vec<std::ops::Range<usize>> = std::iter::once(0..rows.len()).collect();
    let render = |outcome: &Outcome| {
        let r = FindReport {
            imported: None,
            facts: &Default::default(),
            why: &[],
            test: &t,
            range: "a..b",
            commits: &commits,
            outcome,
            probed: &[0, 11],
            notes: &[],
            builds: 2,
            runs: 10,
            reused: 0,
            replayed: None,
            time: TimeSpent::default(),
            skipped: &[],
            searched: 11,
            invocation: "",
            merges: &[],
            seconds: 1.0,
            deterministic: false,
            sparkline: None,
            plot: None,
        };
        let x = Issue {
            find: &r,
            rows: &rows,
            range_rows: &rows,
            blocks: &blocks,
            detection: &Default::default(),
            measured: &measured,
            known: &[],
        };
        issue::markdown(&x)
    };
    let md = render(&Outcome::NoChange {
        before: 13_300_000.0,
        after: 13_310_000.0,
        p_value: 0.43,
        min_detectable: 0.012,
    });
    assert!(md.starts_with("## `value`: no change in `a..b`"), "{md}");
    assert!(
        md.contains("**value: 13.30 MB → 13.31 MB between the ends, p = 0.43**; a change of 1.20 % or more would have been detected."),
        "{md}"
    );
    assert!(md.contains("perfbisect find value a..b"), "{md}");
    assert!(md.contains("- build: none"), "{md}");
    assert!(!md.contains("### Commits around"), "{md}");

    let md = render(&Outcome::Inconclusive {
        reason: "the step may be spread over several commits".into(),
        best_guess: Some(Culprit {
            pos: 8,
            parent: 7,
            candidates: vec![8],
            before: 13_300_000.0,
            after: 13_710_000.0,
            n_before: 5,
            n_after: 5,
            rel_change: 0.0308,
            p_value: 0.02,
            verified: false,
            reruns: 0,
            rerun_windows: 0,
            interval: None,
            windows: 0,
        }),
    });
    assert!(md.starts_with("## `value`: inconclusive in `a..b`"), "{md}");
    assert!(
        md.contains("(best guess, not confirmed): the step may be spread"),
        "{md}"
    );
    assert!(
        md.contains("### Commits around `8b8b8b8b8b` (best guess)"),
        "{md}"
    );
}

/// A config found in the current folder (not the repository's own) is repeated in the
/// reproduce commands, by its file name alone (the reader's copy in the repository: the
/// Markdown is for an issue, and names no path of this machine's).
#[test]
fn reproduce_commands_name_a_config_found_elsewhere() {
    let f = stepped();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("perfbisect"))
        .args(["--no-progress", "--repo"])
        .arg(&f.repo)
        .args(["find", "value", &f.range(), "--format", "md"])
        .current_dir(f.dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("--config perfbisect.toml "), "{md}");
    assert!(!md.contains(&f.dir.path().display().to_string()), "{md}");
}

/// `report` after `find` over the same range states `find`'s verdict and notes, whatever the
/// runs stored since; another definition of the test is another search.
#[test]
fn report_states_the_verdict_find_reached_over_the_same_range() {
    let f = stepped();
    let found = f.json(&["find", "value", &f.range(), "--format", "json"]);
    assert_eq!(found["verdict"], "culprit", "{found}");
    // Every commit measured since: the store shows more than the search looked at.
    f.run_json("value", &f.range(), &[]);
    let j = f.json(&["report", "value", &f.range(), "--format", "json"]);
    let r = &j["find"];
    assert_eq!(r["culprits"], found["culprits"], "{j}\n{found}");
    let notes: Vec<&str> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let kept = found["notes"].as_array().unwrap();
    assert_eq!(
        &notes[..kept.len()],
        &kept.iter().map(|n| n.as_str().unwrap()).collect::<Vec<_>>()[..],
        "{j}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("the verdict is the one perfbisect find reached")),
        "{j}"
    );
    assert_eq!(
        (r["builds"].as_u64(), r["runs"].as_u64()),
        (Some(0), Some(0)),
        "{j}"
    );
    // The Markdown says the same verdict.
    let out = f
        .cmd()
        .args(["report", "value", &f.range()])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    let culprit = &f.ids[7][..10];
    assert!(
        md.starts_with(&format!("## `value`: regression at `{culprit}`")),
        "{md}"
    );
    // A test defined otherwise is searched afresh: no kept verdict is stated for it.
    f.set_config(&CONFIG.replace("threshold = \"2%\"", "threshold = \"3%\""));
    let j = f.json(&["report", "value", &f.range(), "--format", "json"]);
    assert!(
        !j["find"]["notes"]
            .to_string()
            .contains("the verdict is the one"),
        "{j}"
    );
}
