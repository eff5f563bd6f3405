//! Colour in perfbisect's own messages: the `error:` and `warning:` prefixes on stderr,
//! styled like clap's, and only where colour is wanted. anstream decides as for clap's
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
