//! Untrusted text (commit subjects and authors, output tails, units, descriptions) in
//! GitHub-flavoured Markdown, so that it renders as the text it is: no HTML (`<!--` would hide
//! the rest of a comment), no images or links, no `@` mentions or `#1` cross-references, no
//! emphasis, bare `www.` links, `GH-12` references, bidirectional marks (written out), tables
//! cut by a `|` (in a code span too: [`row`]) or lines broken by a newline.

/// Invisible, and breaks what GitHub links: `@name` and `#12` are only recognised with the
/// name or number right after the sign, `https://` only whole.
const JOINER: char = '\u{2060}';

/// `s` as inline Markdown text (a paragraph, a list item or a table cell): Markdown
/// punctuation backslash-escaped, `<`, `>` and `&` as entities, line breaks and other control
/// characters as spaces, and a word joiner after `@`, `#` and `:` before `//`.
pub fn text(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut o = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        // A list marker counts only at the start of a line and before a space: it is escaped
        // there (where the text may land), not in every version number or "13.5 MB".
        let marker = next.is_none_or(|n| n == ' ');
        let after_digits = i > 0 && chars[..i].iter().all(|c| c.is_ascii_digit());
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '$' => {
                o.push('\\');
                o.push(c);
            }
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '@' => {
                o.push('@');
                o.push(JOINER);
            }
            '#' => {
                if i == 0 {
                    o.push('\\');
                }
                o.push('#');
                o.push(JOINER);
            }
            ':' if next == Some('/') => {
                o.push(':');
                o.push(JOINER);
            }
            // GitHub links a bare `www.host/path` too (an extended autolink, recognised
            // only with `www.` whole at the start of a word).
            '.' if i >= 3
                && chars[i - 3..i].iter().all(|c| c.eq_ignore_ascii_case(&'w'))
                && (i == 3 || !chars[i - 4].is_alphanumeric()) =>
            {
                o.push(JOINER);
                o.push('.');
            }
            // `GH-12` is a cross-reference to issue 12 on GitHub, as `#12` is.
            '-' if i >= 2
                && chars[i - 2..i]
                    .iter()
                    .collect::<String>()
                    .eq_ignore_ascii_case("gh")
                && (i == 2 || !chars[i - 3].is_alphanumeric())
                && next.is_some_and(|n| n.is_ascii_digit()) =>
            {
                o.push('-');
                o.push(JOINER);
            }
            '-' | '+' if i == 0 && marker => {
                o.push('\\');
                o.push(c);
            }
            '.' | ')' if after_digits && marker => {
                o.push('\\');
                o.push(c);
            }
            '!' if next == Some('[') => o.push_str("\\!"),
            c if c.is_control() => o.push(' '),
            // A bidirectional mark would turn the text around it: written out instead.
            c => match crate::base::style::visible_char(c) {
                Some(v) => o.push_str(&v),
                None => o.push(c),
            },
        }
    }
    o
}

/// perfbisect's own words (a note, a reason) as inline Markdown: what they put in backticks
/// (a command, a file, a name) as code spans, the rest as [`text`]. Escaping the backticks
/// would show them, backslashes and all, where a command should be.
pub fn prose(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    // An odd number of backticks opens a span it never closes: all of it is text then.
    if parts.len().is_multiple_of(2) {
        return text(s);
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| if i % 2 == 1 { code(p) } else { text(p) })
        .collect()
}

/// `s` as a Markdown code span: the fence one backtick longer than the longest run of them in
/// `s`, padded with a space where `s` starts or ends with one (or with a space, which the
/// span would otherwise eat); line breaks as spaces. Inside a span nothing is markup.
pub fn code(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let fence = "`".repeat(longest_run(&s, '`') + 1);
    let pad = if s.starts_with(['`', ' ']) || s.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// One row of a Markdown table of `cells` (each already Markdown: [`text`], [`code`], or
/// plain numbers). A `|` splits a cell even inside a code span on GitHub, so every `|` not
/// already escaped is escaped here (`\|`; the table drops the backslash again, inside code
/// spans too). Every table row goes through here.
pub fn row<S: AsRef<str>>(cells: &[S]) -> String {
    let mut o = String::from("|");
    for c in cells {
        o.push(' ');
        let mut backslashes = 0;
        for ch in c.as_ref().chars() {
            if ch == '|' && backslashes % 2 == 0 {
                o.push('\\');
            }
            backslashes = if ch == '\\' { backslashes + 1 } else { 0 };
            o.push(if ch.is_control() { ' ' } else { ch });
        }
        o.push_str(" |");
    }
    o
}

/// The fence of a fenced code block holding `body`: three backticks, or one more than the
/// longest run of them in `body` (a shorter fence inside would close the block early).
pub fn fence(body: &str) -> String {
    "`".repeat((longest_run(body, '`') + 1).max(3))
}

/// A list item `- {label}: {command}{rest}`: a one-line command inline as code, a multi-line
/// one (a build recipe of several commands) as a fenced `sh` block inside the item
/// (`- {label}{rest}:` above it), each line as written, so it can be pasted into a shell.
pub fn command_item(label: &str, command: &str, rest: &str) -> String {
    let body = command.trim_end();
    if !body.contains('\n') {
        return format!("- {label}: {}{rest}\n", code(body));
    }
    let fence = fence(body);
    let mut o = format!("- {label}{rest}:\n\n  {fence}sh\n");
    for line in body.lines() {
        if line.trim().is_empty() {
            o.push('\n');
        } else {
            o.push_str("  ");
            o.push_str(line);
            o.push('\n');
        }
    }
    o.push_str(&format!("  {fence}\n\n"));
    o
}

/// The longest run of `c` in `s`.
fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for x in s.chars() {
        run = if x == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 60: a note's commands were shown with their backticks escaped (`\``): they are
    /// code spans, the words around them text, and an unpaired backtick stays text.
    #[test]
    fn a_notes_commands_are_code_spans_not_escaped_backticks() {
        let note = "the step is among those commits (`git -C lib log --oneline a1..b2` lists them)";
        assert_eq!(
            prose(note),
            "the step is among those commits (`git -C lib log --oneline a1..b2` lists them)"
        );
        assert!(!prose(note).contains("\\`"));
        assert_eq!(prose("a `b` *c*"), "a `b` \\*c\\*");
        assert_eq!(prose("one ` alone"), "one \\` alone");
        assert_eq!(prose("`<b>@x`"), "`<b>@x`");
    }

    #[test]
    fn a_multi_line_command_is_a_block_that_pastes_as_written() {
        assert_eq!(
            command_item("build", "make -j2\n", ", artifacts `app`"),
            "- build: `make -j2`, artifacts `app`\n"
        );
        let recipe = "./buildconf\n./configure --with-openssl\n\nmake -j2 `nproc`";
        let item = command_item("build", recipe, ", artifacts `src/curl`");
        assert_eq!(
            item,
            "- build, artifacts `src/curl`:\n\n  ```sh\n  ./buildconf\n  ./configure --with-openssl\n\n  make -j2 `nproc`\n  ```\n\n"
        );
        let fenced = command_item("build", "a\necho ```", "");
        assert!(fenced.contains("  ````sh\n"), "{fenced}");
    }

    #[test]
    fn active_forms_become_text() {
        let t = text("<!-- hide --> @alice ![x](https://e.vil/p.png) #1 `c` a|b *em* <img>");
        for active in ["<!--", "<img", "![", "@a", "#1", "https://", "a|b", " `c"] {
            assert!(!t.contains(active), "{active} in {t}");
        }
        assert!(t.contains("&lt;!-- hide --&gt;"), "{t}");
        assert_eq!(text("line\nbreak\r"), "line break ");
        // Punctuation that only matters at a line's start is left alone elsewhere.
        assert_eq!(text("v1.2.3-rc (fix)"), "v1.2.3-rc (fix)");
        assert_eq!(text("13.5 MB"), "13.5 MB");
        assert_eq!(text("-3"), "-3");
        assert_eq!(text("1. item"), "1\\. item");
        assert_eq!(text("- item"), "\\- item");
        assert_eq!(text("# head"), "\\#\u{2060} head");
    }

    #[test]
    fn bare_www_hosts_are_no_links() {
        let t = text("see www.evil.example/x and WWW.Other.org, not awww.x or www");
        assert!(!t.contains("www.evil") && !t.contains("WWW.Other"), "{t}");
        assert!(
            t.contains("www\u{2060}.evil") && t.contains("WWW\u{2060}.Other"),
            "{t}"
        );
        assert!(t.contains("awww.x") && t.ends_with("www"), "{t}");
    }

    #[test]
    fn a_pipe_in_a_cell_never_splits_it() {
        assert_eq!(row(&[code("p|q.c"), text("a|b")]), "| `p\\|q.c` | a\\|b |");
        assert_eq!(row(&["1", ""]), "| 1 |  |");
        // Cells are split only at the row's own pipes: one more per cell.
        let r = row(&[code("x|y||z"), code("\\|")]);
        let unescaped = r
            .char_indices()
            .filter(|&(i, c)| c == '|' && (i == 0 || &r[i - 1..i] != "\\"))
            .count();
        assert_eq!(unescaped, 3, "{r}");
    }

    #[test]
    fn code_spans_and_fences_outlast_the_backticks_inside() {
        assert_eq!(code("ls"), "`ls`");
        assert_eq!(code("a ``b`` c"), "```a ``b`` c```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a\nb"), "`a b`");
        assert_eq!(fence("plain"), "```");
        assert_eq!(fence("x\n````\ny"), "`````");
    }
}
