//! How text is shown: colour in perfbisect's own messages (the `error:` and `warning:`
//! prefixes on stderr, styled like clap's, and only where colour is wanted), and untrusted text
//! (commit subjects, authors) made inert ([`crate::base::text::shown`]). anstream decides as for clap's
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

/// `c` written out (`\u{202e}`) when it would act instead of show: a control character or a
/// bidirectional mark (Markdown's text, whose own control characters are spaces before this).
pub fn visible_char(c: char) -> Option<String> {
    (c.is_control() || crate::base::text::is_bidi(c)).then(|| format!("\\u{{{:x}}}", c as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_characters_are_written_out() {
        assert_eq!(visible_char('a'), None);
        assert_eq!(visible_char('\u{202e}').as_deref(), Some("\\u{202e}"));
    }
}
