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

/// Shorthand: return early with a usage error.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => {
        return Err($crate::error::UsageError::err(format!($($arg)*)))
    };
}
