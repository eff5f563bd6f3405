//! The small rules every reader of another tool's history shares: a foreign id made a test
//! name, asv's parameters in it, the globs `--machine`/`--env`/`--suite` select with, and
//! which units are the same unit.

/// A foreign id as a perfbisect test name (`[A-Za-z0-9._-]+`): `<` is `lt`, `>` is `gt`, `=`
/// is `eq` (so that fast-histogram's dtypes `'<f8'` and `'>f8'` stay apart), every other run
/// of characters outside the set is one `_`, and `_` and `.` are trimmed at both ends. Empty
/// when nothing of the id is left.
pub fn sanitise(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    let mut gap = false;
    for c in id.chars() {
        let word = match c {
            '<' => Some("lt"),
            '>' => Some("gt"),
            '=' => Some("eq"),
            _ => None,
        };
        if let Some(w) = word {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.push_str(w);
        } else if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.push(c);
        } else {
            gap = true;
        }
    }
    let trimmed = out.trim_matches(|c| c == '_' || c == '.');
    if trimmed == "all" {
        return "all_".to_string();
    }
    trimmed.to_string()
}

/// An asv benchmark with its parameter values (each a Python `repr()`, as asv writes them) as
/// the name to sanitise: the values after the name, one layer of quotes removed, joined by
/// `.` (`time_x`, `["'<f8'", "10"]` → `time_x.<f8.10`).
pub fn asv_plain(name: &str, values: &[&str]) -> String {
    let mut out = name.to_string();
    for v in values {
        out.push('.');
        out.push_str(unquote(v));
    }
    out
}

/// asv's display of a parameterised benchmark: `time_x('<f8', 10)`.
pub fn asv_id(name: &str, values: &[&str]) -> String {
    if values.is_empty() {
        name.to_string()
    } else {
        format!("{name}({})", values.join(", "))
    }
}

/// A value without one layer of matching quotes.
fn unquote(v: &str) -> &str {
    let v = v.trim();
    for q in ['\'', '"'] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// Whether `text` matches the glob `pattern` (`*` any run of characters, `?` one; nothing
/// else is special).
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // The classic two-pointer match with one backtrack point for the last `*`.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// A unit as compared: `ns/iter` and `ns/op` are `ns`, `seconds` is `s`, `B` is `bytes`;
/// case kept (`MB/s` is not `mb/s`).
fn canonical(unit: &str) -> String {
    let u = unit.trim();
    let u = u
        .strip_suffix("/iter")
        .or_else(|| u.strip_suffix("/op"))
        .unwrap_or(u)
        .trim();
    match u {
        "seconds" | "second" | "sec" | "secs" => "s".to_string(),
        "nanoseconds" => "ns".to_string(),
        "microseconds" | "µs" | "μs" => "us".to_string(),
        "milliseconds" => "ms".to_string(),
        "B" | "byte" | "bytes" => "bytes".to_string(),
        "ops/sec" | "ops/s" | "iter/sec" | "iter/s" => "1/s".to_string(),
        other => other.to_string(),
    }
}

/// Whether a value in `foreign` units may be stored for a test in `ours` (values are never
/// converted, so they must be the same unit).
pub fn same_unit(foreign: &str, ours: &str) -> bool {
    canonical(foreign) == canonical(ours)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_what_a_test_name_may_hold_and_keep_dtypes_apart() {
        assert_eq!(sanitise("http2_get"), "http2_get");
        assert_eq!(sanitise("end_to_end/http2_get"), "end_to_end_http2_get");
        assert_eq!(sanitise("BenchmarkX - B/op"), "BenchmarkX_-_B_op");
        assert_eq!(
            sanitise("tests/test_x.py::test_parse[64]"),
            "tests_test_x.py_test_parse_64"
        );
        let lt = sanitise(&asv_plain("h.time_x", &["False", "'<f8'", "1000.0"]));
        let gt = sanitise(&asv_plain("h.time_x", &["False", "'>f8'", "1000.0"]));
        assert_eq!(lt, "h.time_x.False.ltf8.1000.0");
        assert_eq!(gt, "h.time_x.False.gtf8.1000.0");
        assert_eq!(sanitise("a=b"), "aeqb");
        assert_eq!(sanitise(" (x) "), "x");
        assert_eq!(sanitise("all"), "all_");
        assert_eq!(sanitise("***"), "");
        assert_eq!(
            asv_id("h.time_x", &["False", "'<f8'"]),
            "h.time_x(False, '<f8')"
        );
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(glob("gha-*", "gha-aws-skylake"));
        assert!(glob("*py3.12", "conda-py3.12"));
        assert!(!glob("*py3.1", "conda-py3.12"));
        assert!(glob("a?c", "abc"));
        assert!(glob("*", ""));
        assert!(!glob("linux", "Linux"));
        assert!(glob("*a*b*", "xxaybzb"));
    }

    #[test]
    fn units_are_the_same_only_when_they_name_one_unit() {
        assert!(same_unit("ns/iter", "ns"));
        assert!(same_unit("seconds", "s"));
        assert!(same_unit("ns/op", "ns/iter"));
        assert!(!same_unit("us/iter", "ns"));
        assert!(!same_unit("ops/sec", "s"));
        assert!(same_unit("bytes", "B"));
    }
}
