//! The pieces of TOML text `config init` writes: quoted strings and wrapped comments.

/// A TOML basic string.
pub fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `text` as `# ` comment lines of at most 92 columns.
pub fn wrap_comment(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::from("#");
    for w in text.split_whitespace() {
        if line.len() + 1 + w.len() > 92 && line.len() > 1 {
            out += &line;
            out += "\n";
            line = String::from("#");
        }
        line += " ";
        line += w;
    }
    out += &line;
    out += "\n";
    out
}
