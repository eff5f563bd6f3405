//! How text is shown: colour in perfbisect's own messages (the `error:` and `warning:`
//! prefixes on stderr, styled like clap's, and only where colour is wanted), and untrusted text
//! (commit subjects, authors) made inert for a terminal or a CI log ([`visible`]). anstream decides as for clap's
//! messages: never with `NO_COLOR` set or when stderr is not a terminal (a pipe, a file, CI
//! logs), always with `CLICOLOR_FORCE`.

use anstyle::{AnsiColor, Style};

/// Whether text written to stderr may carry colour.
pub fn stderr_color() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
}

/// `word` in `style` when stderr takes colour, else plain.
fn paint(word: &str, style: Style) -> String {
    if stderr_color() {
        format!("{style}{word}{style:#}")
    } else {
        word.to_string()
    }
}

/// The `error:` prefix (bold red, as clap's).
pub fn error_prefix() -> String {
    paint(
        "error:",
        Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
    )
}

/// The `warning:` prefix (bold yellow, as clap's).
pub fn warning_prefix() -> String {
    paint(
        "warning:",
        Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())),
    )
}

/// Print an error message on stderr.
pub fn error(msg: &str) {
    eprintln!("{} {msg}", error_prefix());
}

/// Whether `c` reorders text around it (bidirectional formatting: U+202E turns what follows
/// around) without being seen.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `c` written out (`\u{1b}`) when it would act instead of show: a control character (an
/// escape sequence retitles a terminal or rewrites a CI log's line) or a bidirectional mark.
pub fn visible_char(c: char) -> Option<String> {
    (c.is_control() || is_bidi(c)).then(|| format!("\\u{{{:x}}}", c as u32))
}

/// Untrusted text (a commit subject, an author) as it may be printed anywhere: every control
/// character and bidirectional mark written out ([`visible_char`]), the rest as it is. The one
/// sanitiser of what comes from a repository, applied where commits are read.
pub fn visible(s: &str) -> String {
    if !s.chars().any(|c| c.is_control() || is_bidi(c)) {
        return s.to_string();
    }
    s.chars()
        .map(|c| visible_char(c).unwrap_or_else(|| c.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_written_out() {
        assert_eq!(visible("plain — ünïcode"), "plain — ünïcode");
        assert_eq!(visible("a\u{1b}[2Kb\rc"), "a\\u{1b}[2Kb\\u{d}c");
        assert_eq!(visible("x\u{202e}y\u{2066}"), "x\\u{202e}y\\u{2066}");
    }
}
