//! JSON with its schema version first: what every `--format json` prints.

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
