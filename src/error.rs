//! Error kinds that decide the exit code.

/// Bad usage, bad config, unknown revision or test: exit code 2.
///
/// The message names what is wrong (the key and line, the revision, the test).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl UsageError {
    /// Build an `anyhow::Error` carrying a usage error.
    pub fn err(msg: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(UsageError(msg.into()))
    }
}

/// Exit code of a `find` that ran but could not name a culprit with confidence (verdict
/// `inconclusive`): a script or bot tells it from a finding (0) and a failure (1) without
/// reading the output. Only the runs' indecision: an end that does not build is the build's
/// failure (1), as in every command that builds (src/guide/finding.md, the table of exit
/// codes).
pub const INCONCLUSIVE: i32 = 3;

/// Exit code 2 for usage errors anywhere in the chain, 1 for anything else.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if is_usage(err) {
        2
    } else {
        1
    }
}

/// Whether a usage error is anywhere in the chain.
pub fn is_usage(err: &anyhow::Error) -> bool {
    err.chain().any(|e| e.is::<UsageError>())
}

/// The candidate closest to `word`, when it is close enough to be what was meant (a typo):
/// Jaro-Winkler similarity above 0.8, or at most two edits for names longer than three letters.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let jw = strsim::jaro_winkler(word, c);
        let close = jw > 0.8 || (word.chars().count() > 3 && strsim::levenshtein(word, c) <= 2);
        if close && best.is_none_or(|(b, _)| jw > b) {
            best = Some((jw, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `"; did you mean `X`?"` for the closest candidate, or nothing.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

/// Shorthand: return early with a usage error.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => {
        return Err($crate::error::UsageError::err(format!($($arg)*)))
    };
}
