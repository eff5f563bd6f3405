//! Numbers with SI prefixes in the test's unit, as curl's page writes them ("5.49 G",
//! "13.3 M"): for headlines, tables and plot axes. A unit that carries a prefix already ("ns",
//! "MB/s") is read in its base unit first, so a value never gets two.

/// A power of 1000 and its prefix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// What a value is divided by.
    pub factor: f64,
    /// "k", "M", "G", ... or "m", "µ", "n" (empty for 1).
    pub prefix: &'static str,
}

const UP: [(&str, f64); 6] = [
    ("k", 1e3),
    ("M", 1e6),
    ("G", 1e9),
    ("T", 1e12),
    ("P", 1e15),
    ("E", 1e18),
];
const DOWN: [(&str, f64); 3] = [("m", 1e-3), ("µ", 1e-6), ("n", 1e-9)];

/// Whether values of `unit` read well with milli/micro/nano prefixes: times and unitless
/// numbers do ("12.3 ms"); counts, bytes and ratios in "%" do not.
fn scales_down(unit: &str) -> bool {
    matches!(unit, "s" | "sec" | "seconds" | "")
}

/// The scale that shows `magnitude` (the largest absolute value to show) with one to three
/// digits before the point. Values from 0.1 (times: from 1) to 9,999 keep scale 1, so struct
/// sizes and allocation counts stay exact integers ("3064", "100").
pub fn scale_for(magnitude: f64, unit: &str) -> Scale {
    let m = magnitude.abs();
    let one = Scale {
        factor: 1.0,
        prefix: "",
    };
    if !m.is_finite() || m == 0.0 {
        return one;
    }
    if m >= 1e4 {
        let mut best = one;
        for (p, f) in UP {
            if m >= f {
                best = Scale {
                    factor: f,
                    prefix: p,
                };
            }
        }
        return best;
    }
    if m < 1.0 && scales_down(unit) {
        for (p, f) in DOWN {
            if m >= f {
                return Scale {
                    factor: f,
                    prefix: p,
                };
            }
        }
        return Scale {
            factor: 1e-9,
            prefix: "n",
        };
    }
    one
}

/// The unit written after a prefix: bytes become "B" ("13.30 MB", "5.49 GB/s"), others are
/// kept and set apart ("30.1 k req/s").
fn unit_after(prefix: &str, unit: &str) -> String {
    let bytes = match unit {
        "bytes" | "byte" | "B" => Some("B".to_string()),
        u => ["bytes/", "B/"]
            .iter()
            .find_map(|p| u.strip_prefix(p))
            .map(|per| format!("B/{}", if per == "sec" { "s" } else { per })),
    };
    match (bytes, prefix.is_empty()) {
        (Some(b), false) => format!(" {prefix}{b}"),
        (Some(_), true) => format!(" {unit}"),
        (None, _) if unit.is_empty() => {
            if prefix.is_empty() {
                String::new()
            } else {
                format!(" {prefix}")
            }
        }
        (None, _) if matches!(unit, "s" | "sec" | "seconds") => format!(" {prefix}s"),
        (None, false) => format!(" {prefix} {unit}"),
        (None, true) => format!(" {unit}"),
    }
}

/// A value in a unit that already carries a prefix (a harness's "ns", "MB/s") as the same
/// value in the unit's base ("s", "bytes/sec"), so that it gets the one prefix that fits:
/// 28,100 ns is "28.10 µs", not "28.10 k ns"; 19,750 MB/s is "19.75 GB/s".
fn base(v: f64, unit: &str) -> (f64, &str) {
    let times = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("μs", 1e-6),
        ("ms", 1e-3),
    ];
    if let Some((_, f)) = times.iter().find(|(u, _)| *u == unit) {
        return (v * f, "s");
    }
    let sizes = [
        ("kB", 1e3),
        ("KB", 1e3),
        ("MB", 1e6),
        ("GB", 1e9),
        ("TB", 1e12),
    ];
    for (p, f) in sizes {
        if unit == p {
            return (v * f, "bytes");
        }
        if unit
            .strip_prefix(p)
            .is_some_and(|rest| rest == "/s" || rest == "/sec")
        {
            return (v * f, "bytes/sec");
        }
    }
    (v, unit)
}

/// `v` with four significant digits and an SI prefix, in `unit`: "13.30 MB", "5.495 GB/s",
/// "12.34 ms", "3064 bytes", "100 allocs". Integers below 10,000 are printed exactly.
pub fn quantity(v: f64, unit: &str) -> String {
    let (v, unit) = base(v, unit);
    if !v.is_finite() {
        return format!("{v}{}", unit_after("", unit));
    }
    let s = scale_for(v, unit);
    let x = v / s.factor;
    // Past the largest prefix (or below the smallest) a prefix gives no short number: the
    // value as fmt_num writes it (exponent form for 1e200).
    if s.factor == 1.0 || !(1e-3..1e4).contains(&x.abs()) {
        return format!("{}{}", crate::base::text::fmt_num(v), unit_after("", unit));
    }
    let digits = x.abs().log10().floor() as i32 + 1;
    let decimals = (4 - digits).clamp(0, 3) as usize;
    format!("{x:.decimals$}{}", unit_after(s.prefix, unit))
}

/// A step's level: an exact value (a count, a size compared exactly) with every digit, as
/// the stored runs hold it ("100650 bytes", "90027411 instructions"), so that every view
/// prints the same digits; any other level as [`quantity`] scales it.
pub fn level(v: f64, unit: &str, exact: bool) -> String {
    if exact && v.is_finite() && v.abs() < 1e15 {
        let digits = crate::base::text::fmt_num(v);
        return if unit.is_empty() {
            digits
        } else {
            format!("{digits} {unit}")
        };
    }
    quantity(v, unit)
}

/// The two levels of a step as every view prints them: exact values with every digit
/// ([`level`]), else [`quantity_pair`] (its digits wherever a prefix would hide the step).
pub fn level_pair(before: f64, after: f64, unit: &str, exact: bool) -> (String, String) {
    if exact {
        (level(before, unit, true), level(after, unit, true))
    } else {
        quantity_pair(before, after, unit)
    }
}

/// The word [`quantity`] writes last for `unit` ("instructions", "allocs"), which a narrow
/// label may leave to its axis or subtitle; `None` for bytes and seconds, whose short symbols
/// ("MB", "ms") carry the prefix, and for no unit.
fn word_unit(unit: &str) -> Option<&str> {
    let u = base(1.0, unit).1;
    let short = u.is_empty()
        || matches!(u, "s" | "sec" | "seconds" | "bytes" | "byte" | "B")
        || ["bytes/", "B/"].iter().any(|p| u.starts_with(p));
    (!short).then_some(u)
}

/// [`quantity`] without a word unit: "88.36 M" for 88,360,000 instructions, where a label is
/// too narrow for "88.36 M instructions" and the axis or the subtitle names the unit. Bytes
/// and seconds keep their symbols ("13.30 MB", "12.34 ms").
pub fn quantity_short(v: f64, unit: &str) -> String {
    strip_word_unit(quantity(v, unit), unit)
}

/// `text` (a [`quantity`] or a tick label) without its trailing word unit, when it has one.
pub fn strip_word_unit(text: String, unit: &str) -> String {
    match word_unit(unit).and_then(|w| text.strip_suffix(&format!(" {w}"))) {
        Some(t) => t.to_string(),
        None => text,
    }
}

/// [`quantity`] with an explicit sign: "+62.14 MB/s", "-3 bytes".
pub fn signed_quantity(v: f64, unit: &str) -> String {
    let q = quantity(v, unit);
    if v > 0.0 {
        format!("+{q}")
    } else {
        q
    }
}

/// The rounding step of [`quantity`]'s text of `v`, in `unit` (1 where it prints exactly).
fn shown_step(v: f64, unit: &str) -> f64 {
    let (b, base_unit) = base(v, unit);
    let s = scale_for(b, base_unit);
    if !b.is_finite() || s.factor == 1.0 || b == 0.0 {
        return 0.0;
    }
    let x = b / s.factor;
    let digits = x.abs().log10().floor() as i32 + 1;
    let decimals = (4 - digits).clamp(0, 3);
    // Back in the value's own unit.
    10f64.powi(-decimals) * s.factor * (v / b)
}

/// An integer with thousands separators: `101,634`.
fn grouped(v: f64) -> String {
    let digits = format!("{}", v.abs() as u64);
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if v < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

/// A before and an after as [`quantity`] writes them, unless their difference would be lost
/// in the rounding: whole numbers (a size in bytes, a count) that differ by less than ten
/// steps of the shown digits, which round them, are written exactly: "101,634 bytes →
/// 101,534 bytes" rather than "101.6 kB → 101.5 kB".
pub fn quantity_pair(before: f64, after: f64, unit: &str) -> (String, String) {
    let whole = |v: f64| v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15;
    let step = shown_step(before, unit).max(shown_step(after, unit));
    // The shown digits lose something (101,634 is not 101.6 k; 13,300,000 is 13.30 M).
    let lossy = |v: f64| {
        let s = shown_step(v, unit);
        s > 0.0 && ((v / s).round() * s - v).abs() > 1e-9 * v.abs().max(1.0)
    };
    if whole(before)
        && whole(after)
        && before != after
        && (after - before).abs() < 10.0 * step
        && (lossy(before) || lossy(after))
    {
        let u = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        return (
            format!("{}{u}", grouped(before)),
            format!("{}{u}", grouped(after)),
        );
    }
    (quantity(before, unit), quantity(after, unit))
}

/// Labels for axis ticks `ticks` (evenly spaced) in one shared scale, with just enough
/// decimals that neighbouring ticks read differently: "13.2 MB", "13.4 MB".
pub fn tick_labels(ticks: &[f64], unit: &str) -> Vec<String> {
    let ticks: Vec<f64> = ticks.iter().map(|t| base(*t, unit).0).collect();
    let unit = base(1.0, unit).1;
    let ticks = ticks.as_slice();
    let magnitude = ticks.iter().fold(0.0_f64, |m, t| m.max(t.abs()));
    let s = scale_for(magnitude, unit);
    let step = if ticks.len() > 1 {
        (ticks[1] - ticks[0]).abs() / s.factor
    } else {
        1.0
    };
    let decimals = if step > 0.0 && step.is_finite() {
        (-(step.log10().floor()) as i32).clamp(0, 6) as usize
    } else {
        0
    };
    // 2.5-steps need one more digit than their power of ten says.
    let decimals = if decimals < 6
        && ((step * 10f64.powi(decimals as i32)).round() - step * 10f64.powi(decimals as i32)).abs()
            > 1e-6
    {
        decimals + 1
    } else {
        decimals
    };
    let unit_s = unit_after(s.prefix, unit);
    ticks
        .iter()
        .map(|t| {
            let x = t / s.factor;
            // No "-0".
            let x = if x.abs() < 1e-12 { 0.0 } else { x };
            format!("{x:.decimals$}{unit_s}")
        })
        .collect()
}

/// About `target` evenly spaced round numbers (steps of 1, 2, 2.5 or 5 times a power of ten)
/// covering `lo..=hi`, all inside it.
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo || target == 0 {
        return if lo.is_finite() { vec![lo] } else { Vec::new() };
    }
    let raw = (hi - lo) / target as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil();
    let mut out = Vec::new();
    let mut k = first;
    while k * step <= hi + step * 1e-9 && out.len() < 100 {
        out.push(k * step);
        k += 1.0;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_exact_sizes_close_together_are_written_exactly() {
        // 100 bytes apart at 101.6 kB: four digits would hide the change.
        assert_eq!(
            quantity_pair(101_634.0, 101_534.0, "bytes"),
            ("101,634 bytes".to_string(), "101,534 bytes".to_string())
        );
        // Far apart, or not whole numbers: as quantity writes them.
        assert_eq!(
            quantity_pair(13_300_000.0, 13_740_000.0, "bytes"),
            ("13.30 MB".to_string(), "13.74 MB".to_string())
        );
        assert_eq!(
            quantity_pair(0.01234, 0.01235, "s"),
            (quantity(0.01234, "s"), quantity(0.01235, "s"))
        );
        // Round numbers the digits show exactly stay short.
        assert_eq!(
            quantity_pair(13_300_000.0, 13_310_000.0, "bytes"),
            ("13.30 MB".to_string(), "13.31 MB".to_string())
        );
        // Small integers are exact already.
        assert_eq!(
            quantity_pair(3064.0, 3072.0, "bytes"),
            ("3064 bytes".to_string(), "3072 bytes".to_string())
        );
        // A harness's prefixed unit is read in its base first: 19,750 MB/s is 19.75 GB/s.
        assert_eq!(quantity(19_750.0, "MB/s"), "19.75 GB/s");
        assert_eq!(quantity(165_969_758.0, "it/s"), "166.0 M it/s");
    }

    use super::*;

    #[test]
    fn a_short_quantity_leaves_a_word_unit_to_the_axis() {
        assert_eq!(
            quantity(88_360_000.0, "instructions"),
            "88.36 M instructions"
        );
        assert_eq!(quantity_short(88_360_000.0, "instructions"), "88.36 M");
        assert_eq!(quantity_short(13_300_000.0, "bytes"), "13.30 MB");
        assert_eq!(quantity_short(0.01234, "s"), "12.34 ms");
        assert_eq!(quantity_short(28_100.0, "ns"), "28.10 µs");
        assert_eq!(quantity_short(7.0, ""), "7");
        assert_eq!(
            strip_word_unit("88.5 M instructions".into(), "instructions"),
            "88.5 M"
        );
        assert_eq!(strip_word_unit("13.5 MB".into(), "bytes"), "13.5 MB");
    }

    #[test]
    fn quantities_read_like_curls_page() {
        assert_eq!(quantity(13_300_000.0, "bytes"), "13.30 MB");
        assert_eq!(quantity(5_494_996_262.0, "bytes/sec"), "5.495 GB/s");
        assert_eq!(quantity(5_494_996_262.0, ""), "5.495 G");
        assert_eq!(quantity(30_100.0, "req/s"), "30.10 k req/s");
        assert_eq!(quantity(3064.0, "bytes"), "3064 bytes");
        assert_eq!(quantity(100.0, "allocs"), "100 allocs");
        assert_eq!(quantity(0.01234, "s"), "12.34 ms");
        assert_eq!(quantity(0.000_004_2, "s"), "4.200 µs");
        assert_eq!(quantity(1.5, "s"), "1.5 s");
        assert_eq!(quantity(0.25, "%"), "0.25 %");
        assert_eq!(quantity(-20_000.0, "bytes"), "-20.00 kB");
        assert_eq!(quantity(f64::NAN, "s"), "NaN s");
        assert_eq!(signed_quantity(62_143_419.0, "bytes/sec"), "+62.14 MB/s");
        assert_eq!(signed_quantity(-3.0, "bytes"), "-3 bytes");
        // Units that carry a prefix already get the one that fits instead of a second.
        assert_eq!(quantity(28_100.0, "ns"), "28.10 µs");
        assert_eq!(quantity(7358.7, "ns"), "7.359 µs");
        assert_eq!(quantity(19_750.0, "MB/s"), "19.75 GB/s");
        assert_eq!(quantity(1510.0, "ns"), "1.510 µs");
        assert_eq!(tick_labels(&[20_000.0, 30_000.0], "ns"), ["20 µs", "30 µs"]);
    }

    #[test]
    fn ticks_are_round_and_their_labels_differ() {
        let t = nice_ticks(13.21e6, 13.79e6, 6);
        assert!(t.len() >= 4 && t.len() <= 8, "{t:?}");
        assert!(t.iter().all(|v| (13.21e6..=13.79e6).contains(v)));
        let l = tick_labels(&t, "bytes");
        assert_eq!(l[0], "13.3 MB", "{l:?}");
        let mut d = l.clone();
        d.dedup();
        assert_eq!(d.len(), l.len(), "{l:?}");
        let t = nice_ticks(5.0e9, 5.9e9, 5);
        let l = tick_labels(&t, "");
        assert!(l.contains(&"5.2 G".to_string()), "{l:?}");
        // 2.5-steps keep their half digit.
        let l = tick_labels(&[0.0, 2.5, 5.0, 7.5], "allocs");
        assert_eq!(l, ["0.0 allocs", "2.5 allocs", "5.0 allocs", "7.5 allocs"]);
        let l = tick_labels(&[0.010, 0.012, 0.014], "s");
        assert_eq!(l, ["10 ms", "12 ms", "14 ms"]);
        assert_eq!(nice_ticks(1.0, 1.0, 5), vec![1.0]);
    }

    #[test]
    fn a_value_past_every_prefix_is_written_in_exponent_form() {
        let q = quantity(1.1e200, "");
        assert!(q.len() < 20 && q.contains("e200"), "{q}");
        let q = quantity(-3e-30, "s");
        assert!(q.len() < 20 && q.contains("e-30"), "{q}");
        assert_eq!(quantity(2.5e7, "bytes"), "25.00 MB");
    }

    #[test]
    fn an_exact_level_keeps_every_digit() {
        assert_eq!(level(100_650.0, "bytes", true), "100650 bytes");
        assert_eq!(level(90_027_411.0, "", true), "90027411");
        assert_eq!(
            level(100_650.0, "bytes", false),
            quantity(100_650.0, "bytes")
        );
    }
}
