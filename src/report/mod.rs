//! Rendering results for terminals, scripts and bug trackers.

pub mod charts;
pub mod export;
pub mod find;
pub mod html;
pub mod issue;
pub mod md;
pub mod plot;
pub mod show;
pub mod spark;
pub mod units;
pub mod why;

/// The version of every JSON object perfbisect prints (its `"schema"` field, first). It
/// changes when a field is removed or changes meaning; new fields may appear without it.
pub const JSON_SCHEMA: u32 = 1;

/// `body`'s fields after `"schema": JSON_SCHEMA`.
#[derive(serde::Serialize)]
struct Versioned<'a, T: serde::Serialize> {
    schema: u32,
    #[serde(flatten)]
    body: &'a T,
}

/// `value` (a struct or map) as pretty JSON with `"schema"` first, and a newline.
pub fn json_pretty<T: serde::Serialize>(value: &T) -> serde_json::Result<String> {
    Ok(serde_json::to_string_pretty(&Versioned {
        schema: JSON_SCHEMA,
        body: value,
    })? + "\n")
}

/// `value` as one line of JSON with `"schema"` first (no newline).
pub fn json_line<T: serde::Serialize>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string(&Versioned {
        schema: JSON_SCHEMA,
        body: value,
    })
}

/// A number with up to five significant digits, trailing zeros dropped; integers stay integers.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{}", v as i64);
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

#[cfg(test)]
mod tests {
    use super::fmt_num;

    #[test]
    fn numbers_read_well() {
        assert_eq!(fmt_num(3064.0), "3064");
        assert_eq!(fmt_num(1.234567), "1.2346");
        assert_eq!(fmt_num(0.0012345), "0.0012345");
        assert_eq!(fmt_num(12345.678), "12346");
        assert_eq!(fmt_num(3002.5), "3002.5");
    }
}
