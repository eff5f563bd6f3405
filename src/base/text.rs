//! The small pieces every message and report is made of: numbers with five significant
//! digits, p-values, durations, counts with their plural, commit dates, lists of names elided in the
//! middle, and the natural order of round names. Below everything that prints, `bisect`'s
//! evidence included.

/// The smallest p-value printed as a number: below it the tests' float arithmetic (normal
/// approximations, tail sums) says nothing more, and "p = 1.1e-98" reads as a certainty
/// no run can give.
pub const P_FLOOR: f64 = 1e-15;

/// A p-value as "p = 1.23e-4", or "p < 1e-15" below [`P_FLOOR`] (a p of 0 would read as
/// certainty, or as an exact comparison).
pub fn fmt_p(p: f64) -> String {
    if p >= P_FLOOR || p.is_nan() {
        format!("p = {p:.2e}")
    } else {
        format!("p < {P_FLOOR:.0e}")
    }
}

/// A relative change (`rel`: 0.05 for +5 %) as a signed percentage with `decimals`, or beyond
/// +1000 % as a ratio, "×20": "+2000000166.7 %" is a number nobody reads.
pub fn fmt_rel(rel: f64, decimals: usize) -> String {
    if rel.is_finite() && rel > 10.0 {
        let ratio = 1.0 + rel;
        return if ratio < 1e6 {
            format!("×{}", fmt_num((ratio * 10.0).round() / 10.0))
        } else {
            format!("×{ratio:.1e}")
        };
    }
    format!("{:+.*} %", decimals, rel * 100.0)
}

/// A number with up to five significant digits, trailing zeros dropped; integers stay integers.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{}", v as i64);
    }
    if v != 0.0 && (v.abs() >= 1e15 || v.abs() < 1e-6) {
        // Five significant digits and an exponent: a 1e200 is not 200 digits, a 1e-9 not 0.
        let s = format!("{v:.4e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}e{exp}");
    }
    let mag = if v == 0.0 {
        0
    } else {
        v.abs().log10().floor() as i32
    };
    let decimals = (4 - mag).clamp(0, 12) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// [`fmt_num`] with an explicit sign.
pub fn fmt_signed(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", fmt_num(v))
    } else {
        fmt_num(v)
    }
}

/// A commit time as `YYYY-MM-DD HH:MM UTC`.
pub fn date(secs: i64) -> String {
    let (year, month, day, h, m, _) = civil(secs);
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02} UTC")
}

/// A time as ISO 8601 in UTC, to the second: `2023-11-14T22:29:00Z`.
pub fn iso8601(secs: i64) -> String {
    let (year, month, day, h, m, s) = civil(secs);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

/// Seconds since the epoch as (year, month, day, hour, minute, second) in UTC.
pub fn civil(secs: i64) -> (i128, i64, i64, i64, i64, i64) {
    // Any i64 that a commit object can hold, years past 9999 and before 1970 included:
    // days to a civil date by Howard Hinnant's algorithm, in i64 so nothing overflows.
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = i128::from(yoe) + i128::from(era) * 400 + i128::from(month <= 2);
    (year, month, day, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Whether `c` reorders text around it (bidirectional formatting: U+202E turns what follows
/// around) without being seen.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Untrusted text from a repository (a commit subject, an author) as it is shown anywhere: a
/// terminal, a CI log, Markdown, HTML, JSON. A tab or line break is a space, as it reads; any
/// other control character (an escape sequence would retitle a terminal or rewrite a CI log's
/// line) the replacement character `�`; a bidirectional mark, which would turn the text
/// around it, written out (`\u{202e}`). The one sanitiser of what comes from a repository,
/// applied where commits are read.
pub fn shown(s: &str) -> String {
    if !s.chars().any(|c| c.is_control() || is_bidi(c)) {
        return s.to_string();
    }
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' | '\n' | '\r' | '\u{b}' | '\u{c}' => o.push(' '),
            c if c.is_control() => o.push(char::REPLACEMENT_CHARACTER),
            c if is_bidi(c) => o.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// `1 commit`, `3 commits`.
pub fn count(n: usize, what: &str) -> String {
    plural(n, what, &format!("{what}s"))
}

/// "1 search", "3 searches": [`count`] for words whose plural is not theirs plus "s".
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Names as a reader takes them in: all of them when there are a few, else the first and
/// last three around how many were left out ("R0, R1, R2, … (1244 more) …, R1247, R1248,
/// R1249").
pub fn some_of(names: &[String]) -> String {
    if names.len() > 8 {
        format!(
            "{}, … ({} more) …, {}",
            names[..3].join(", "),
            names.len() - 6,
            names[names.len() - 3..].join(", ")
        )
    } else {
        names.join(", ")
    }
}

/// Text order with runs of digits compared as numbers: `R2` before `R10`, as a person counts
/// rounds.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> impl Iterator<Item = (bool, &str)> {
        let mut rest = s;
        std::iter::from_fn(move || {
            let first = rest.chars().next()?;
            let digit = first.is_ascii_digit();
            let end = rest
                .find(|c: char| c.is_ascii_digit() != digit)
                .unwrap_or(rest.len());
            let (chunk, tail) = rest.split_at(end);
            rest = tail;
            Some((digit, chunk))
        })
    }
    let (mut x, mut y) = (chunks(a), chunks(b));
    loop {
        match (x.next(), y.next()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some((true, p)), Some((true, q))) => {
                let (p0, q0) = (p.trim_start_matches('0'), q.trim_start_matches('0'));
                let o = p0.len().cmp(&q0.len()).then_with(|| p0.cmp(q0));
                if o.is_ne() {
                    return o;
                }
            }
            (Some((_, p)), Some((_, q))) => {
                if p != q {
                    return p.cmp(q);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{fmt_num, natural_cmp, some_of};

    #[test]
    fn many_names_are_elided_in_the_middle_and_counted() {
        let names: Vec<String> = (0..1250).map(|i| format!("R{i}")).collect();
        assert_eq!(
            some_of(&names),
            "R0, R1, R2, … (1244 more) …, R1247, R1248, R1249"
        );
        assert_eq!(some_of(&names[..3]), "R0, R1, R2");
    }

    #[test]
    fn rounds_sort_as_they_are_counted() {
        let mut r = vec!["R10", "R2", "R1", "nightly-3", "R02", "nightly-20", "R"];
        r.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            r,
            ["R", "R1", "R02", "R2", "R10", "nightly-3", "nightly-20"]
        );
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(fmt_num(3064.0), "3064");
        assert_eq!(fmt_num(1.234567), "1.2346");
        assert_eq!(fmt_num(0.0012345), "0.0012345");
        assert_eq!(fmt_num(12345.678), "12346");
        // Huge and tiny magnitudes in exponent form, five significant digits.
        assert_eq!(fmt_num(9.952345334e199), "9.9523e199");
        assert_eq!(fmt_num(-1.5e300), "-1.5e300");
        assert_eq!(fmt_num(2.5e-9), "2.5e-9");
        assert_eq!(fmt_num(1e15), "1e15");
        assert_eq!(fmt_num(3002.5), "3002.5");
    }
}

#[cfg(test)]
mod shown_tests {
    use super::shown;

    #[test]
    fn subjects_show_tabs_as_spaces_and_nothing_that_acts() {
        assert_eq!(shown("plain — ünïcode"), "plain — ünïcode");
        assert_eq!(
            shown("fix:\tthe tab"),
            "fix: the tab",
            "a tab, never `\\u{{9}}`"
        );
        assert_eq!(shown("a\r\nb"), "a  b");
        assert_eq!(shown("a\u{1b}[2Kb\u{7}c"), "a\u{fffd}[2Kb\u{fffd}c");
        assert_eq!(shown("x\u{202e}y\u{2066}"), "x\\u{202e}y\\u{2066}");
        // Shown twice is shown once.
        let s = shown("a\t\u{1b}\u{202e}b");
        assert_eq!(shown(&s), s);
    }
}

#[cfg(test)]
mod date_tests {
    use super::{date, iso8601};

    #[test]
    fn dates_of_any_commit_format_without_panicking() {
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
        assert_eq!(date(1_700_000_940), "2023-11-14 22:29 UTC");
        assert_eq!(date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(date(-86_400), "1969-12-31 00:00 UTC");
        // Year 10000 and beyond, and the extremes a commit object can hold.
        assert_eq!(date(253_402_300_800), "10000-01-01 00:00 UTC");
        assert_eq!(iso8601(1_700_000_945), "2023-11-14T22:29:05Z");
        for s in [i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1] {
            assert!(date(s).ends_with(" UTC"));
        }
    }
}

/// Seconds as a person reads them: under a second in milliseconds ("386ms"), under a minute
/// with one decimal ("10.4s"), else whole seconds ("1m 40s", "2h 3m 5s"). Never more digits
/// than the time is worth: "10s 386ms" read as two numbers to add.
pub fn fmt_secs(s: f64) -> String {
    let s = if s.is_finite() { s.max(0.0) } else { 0.0 };
    let ms = (s * 1000.0).round();
    if ms < 1000.0 {
        return format!("{ms:.0}ms");
    }
    let tenths = (s * 10.0).round();
    if tenths < 600.0 {
        return format!("{:.1}s", tenths / 10.0);
    }
    humantime::format_duration(std::time::Duration::from_secs(s.round() as u64)).to_string()
}

#[cfg(test)]
mod fmt_secs_tests {
    use super::fmt_secs;

    #[test]
    fn durations_read_as_a_person_reads_them() {
        // Under a second: milliseconds.
        assert_eq!(fmt_secs(0.0), "0ms");
        assert_eq!(fmt_secs(0.386), "386ms");
        assert_eq!(fmt_secs(0.0004), "0ms");
        // Under a minute: one decimal, never "10s 386ms".
        assert_eq!(fmt_secs(10.386), "10.4s");
        assert_eq!(fmt_secs(1.0), "1.0s");
        assert_eq!(fmt_secs(0.9996), "1.0s", "rounds up into the next form");
        assert_eq!(fmt_secs(59.94), "59.9s");
        assert_eq!(fmt_secs(59.96), "1m", "rounds up into whole minutes");
        // A minute or more: whole seconds.
        assert_eq!(fmt_secs(100.4), "1m 40s");
        assert_eq!(fmt_secs(1589.432), "26m 29s");
        assert_eq!(fmt_secs(7385.0), "2h 3m 5s");
        // Nothing that is not a duration.
        assert_eq!(fmt_secs(-1.0), "0ms");
        assert_eq!(fmt_secs(f64::NAN), "0ms");
    }
}
