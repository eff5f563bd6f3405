//! Random nights (issue 56): the change-point model over simulated night-like schedules of
//! perfbisect's commands (see scripts/nights/sim.rs). Prints, per family, the false certain
//! steps per history (certain where nothing moved), and the power: real steps decided at
//! their commit where a link exists, and seen (decided or undecided) where none does.
//! Run with `cargo bench --bench nights -- [HISTORIES]` (scripts/bench-nights.sh runs it beside
//! the build before the change).

#[path = "nights/sim.rs"]
mod sim;

use sim::{family, Kind, Setup};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `show KIND STEP K`: history K of a family, run by run, and what detect says of it.
    if let Some(i) = args.iter().position(|a| a == "show") {
        let kind = if args[i + 1] == "imports" {
            Kind::Imports
        } else {
            Kind::Commands
        };
        let step: f64 = args[i + 2].parse().unwrap();
        let k: u64 = args[i + 3].parse().unwrap();
        let seed0 = std::env::var("NIGHTS_SEED0")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        let (h, _) = sim::history(
            kind,
            (step > 0.0).then_some(step),
            seed0,
            k,
            Setup::default(),
        );
        println!(
            "{}\nsteps {:?}\n{}",
            h.log.join("\n"),
            h.steps,
            sim::dump(&h)
        );
        // `show KIND STEP K LO HI`: the view of the range LO..HI instead of the whole.
        let lo = args.get(i + 4).and_then(|a| a.parse().ok()).unwrap_or(0);
        let hi = args
            .get(i + 5)
            .and_then(|a| a.parse().ok())
            .unwrap_or(h.len() - 1);
        println!("{:#?}", h.detect(lo, hi));
        return;
    }
    if args.iter().any(|a| a == "single") {
        // One session over every commit, no step: what the model makes of plain noise.
        for k in 0..40u64 {
            let mut h = sim::History::new(40, &[], Setup::default(), k);
            h.run(0, 39, Some((1, 1)), false, 1.0);
            let d = h.detect(0, 39);
            println!(
                "{k} points {} undecided {}",
                d.points.len(),
                d.undecided.len()
            );
        }
        return;
    }
    let count: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200);
    let setup = Setup::default();
    // Other histories than the page's (NIGHTS_SEED0, default 1): the rates are no shape.
    let seed0: u64 = std::env::var("NIGHTS_SEED0")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let started = std::time::Instant::now();
    println!("| schedules | step | histories | false certain (per history) | histories with one | linked: decided at its commit | linked: the bound (told the commit) decides | of those, decided | no link: seen | of those, the runs show the move | of those, seen | undecided elsewhere (per history) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (kind, name) in [
        (Kind::Commands, "commands"),
        (Kind::Imports, "imports + commands"),
    ] {
        for step in [
            None,
            Some(2.0 * setup.threshold),
            Some(5.0 * setup.threshold),
        ] {
            let t = family(kind, step, count, seed0, setup);
            let pct = |a: usize, b: usize| {
                if b == 0 {
                    "-".to_string()
                } else {
                    format!("{a} of {b} ({:.0} %)", 100.0 * a as f64 / b as f64)
                }
            };
            println!(
                "| {name} | {} | {} | {} ({:.3}) | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                step.map_or("none".to_string(), |s| format!("+{:.0} %", 100.0 * s)),
                t.histories,
                t.false_certain,
                t.false_certain as f64 / t.histories as f64,
                t.with_false,
                pct(t.linked_decided, t.linked),
                pct(t.oracle_decided, t.linked),
                pct(t.both_decided, t.oracle_decided),
                pct(t.unlinked_seen, t.unlinked),
                pct(t.unlinked_shown, t.unlinked),
                pct(t.shown_seen, t.unlinked_shown),
                t.false_undecided as f64 / t.histories as f64,
            );
            if std::env::var_os("NIGHTS_EXAMPLES").is_some() {
                eprintln!("{name} {step:?}:");
                for e in &t.examples {
                    eprintln!("  {e}");
                }
                for e in &t.misses {
                    eprintln!("  miss {e}");
                }
                for e in &t.unseen {
                    eprintln!("  unseen {e}");
                }
            }
        }
    }
    eprintln!("{:.1} s", started.elapsed().as_secs_f64());
}
