//! A guide page as a manual page of section 7 (`perfbisect-guide-NAME.7`): the Markdown the
//! guide is written in (headings, paragraphs, lists, tables, code blocks, inline code, bold,
//! links) turned into man(7) macros that groff renders without a warning.

/// The roff of the page `name`, titled `title`, from its Markdown `text`.
pub fn page(name: &str, title: &str, text: &str) -> String {
    let mut o = format!(
        ".TH \"perfbisect\\-guide\\-{}\" 7 \"\" \"perfbisect {}\" \"perfbisect guide\"\n.SH NAME\nperfbisect\\-guide\\-{} \\- {}\n",
        escape(name),
        env!("CARGO_PKG_VERSION"),
        escape(name),
        inline(title)
    );
    // Ragged right, no hyphenation: long code words (test names, paths) cannot be justified.
    o += ".ad l\n.nh\n";
    let mut lines = text.lines().peekable();
    let mut first_heading = true;
    // The text of the paragraph or list item being read: Markdown wraps lines anywhere,
    // inside a code span too, so a paragraph is converted whole.
    let mut para = String::new();
    let flush = |o: &mut String, para: &mut String| {
        if !para.is_empty() {
            *o += &inline(para.trim());
            *o += "\n";
            para.clear();
        }
    };
    while let Some(line) = lines.next() {
        let t = line.trim_end();
        let heading = t
            .strip_prefix("# ")
            .map(|h| (1, h))
            .or_else(|| t.strip_prefix("## ").map(|h| (2, h)))
            .or_else(|| t.strip_prefix("### ").map(|h| (3, h)))
            .or_else(|| t.strip_prefix("#### ").map(|h| (3, h)));
        if let Some((level, h)) = heading {
            flush(&mut o, &mut para);
            if level == 1 && first_heading {
                first_heading = false;
                o += ".SH DESCRIPTION\n";
            } else if level <= 2 {
                o += &format!(".SH \"{}\"\n", quoted(h));
            } else {
                o += &format!(".SS \"{}\"\n", quoted(h));
            }
        } else if t.trim_start().starts_with("```") {
            flush(&mut o, &mut para);
            o += ".PP\n.RS 2\n.nf\n";
            for code in lines.by_ref() {
                if code.trim_start().starts_with("```") {
                    break;
                }
                o += &literal(code);
                o += "\n";
            }
            o += ".fi\n.RE\n";
        } else if t.starts_with('|') {
            flush(&mut o, &mut para);
            let mut rows = vec![cells(t)];
            while let Some(next) = lines.peek().filter(|l| l.trim_start().starts_with('|')) {
                rows.push(cells(next));
                lines.next();
            }
            table(&mut o, &rows);
        } else if t.trim().is_empty() || t.trim_start().starts_with("<!--") {
            flush(&mut o, &mut para);
        } else if let Some((mark, rest)) = list_item(t) {
            flush(&mut o, &mut para);
            o += &format!(".IP \"{mark}\" 4\n");
            para.push_str(rest);
        } else if t.trim_start().starts_with('<') && t.trim_end().ends_with('>') {
            // HTML of a Markdown page (`<details>`): nothing to show in a terminal.
        } else {
            if para.is_empty() && !o.ends_with(" 4\n") {
                o += ".PP\n";
            }
            if !para.is_empty() {
                para.push(' ');
            }
            para.push_str(t.trim());
        }
    }
    flush(&mut o, &mut para);
    o
}

/// A list item's mark (`\(bu` or `3.`) and text.
fn list_item(line: &str) -> Option<(String, &str)> {
    let l = line.trim_start();
    if line.len() - l.len() > 1 {
        return None;
    }
    if let Some(rest) = l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")) {
        return Some(("\\(bu".into(), rest));
    }
    let digits = l.chars().take_while(char::is_ascii_digit).count();
    let rest = l[digits..].strip_prefix(". ")?;
    (digits > 0).then(|| (format!("{}.", &l[..digits]), rest))
}

/// The cells of a table row `| a | b |` (escaped pipes kept).
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cur).trim().to_string()),
            c => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    out
}

/// A table as tagged paragraphs: each row's first cell the tag, the others below it, each
/// after its column's heading.
fn table(o: &mut String, rows: &[Vec<String>]) {
    let header = &rows[0];
    let body = rows
        .iter()
        .skip(1)
        .filter(|r| !r.iter().all(|c| c.chars().all(|ch| "-:".contains(ch))));
    for r in body {
        *o += &format!(".TP\n{}\n", inline(r.first().map_or("", String::as_str)));
        let rest: Vec<String> = r
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, c)| !c.is_empty())
            .map(|(i, c)| match header.get(i).filter(|h| !h.is_empty()) {
                Some(h) => format!("{}: {}", inline(h), inline(c)),
                None => inline(c),
            })
            .collect();
        *o += &rest.join("; ");
        *o += "\n";
    }
}

/// Inline Markdown as roff: code and bold in bold, links as their text.
fn inline(s: &str) -> String {
    let mut o = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('`') {
            // A code span ends at the same number of backticks it began with.
            let ticks = 1 + r.chars().take_while(|&c| c == '`').count();
            let fence = "`".repeat(ticks);
            let body = &rest[ticks..];
            if let Some(end) = body.find(&fence) {
                // `\:` lets a long name (a test's path, `a::b_c`) break where it may.
                let code = escape(body[..end].trim())
                    .replace("::", "::\\:")
                    .replace('_', "_\\:")
                    .replace('/', "/\\:");
                o += &format!("\\fB{code}\\fR");
                rest = &body[end + ticks..];
                continue;
            }
            o += &escape(&fence);
            rest = body;
        } else if let Some(r) = rest.strip_prefix("**") {
            if let Some(end) = r.find("**") {
                o += &format!("\\fB{}\\fR", inline(&r[..end]));
                rest = &r[end + 2..];
                continue;
            }
            o += "**";
            rest = r;
        } else if let Some(r) = rest.strip_prefix('[') {
            if let Some((text, after)) = r.split_once("](") {
                if let Some(end) = after.find(')') {
                    o += &inline(text);
                    rest = &after[end + 1..];
                    continue;
                }
            }
            o += "[";
            rest = r;
        } else {
            let next = rest.find(['`', '*', '[']).unwrap_or(rest.len()).max(1);
            let next = (1..=next)
                .rev()
                .find(|&i| rest.is_char_boundary(i))
                .unwrap_or(1);
            o += &escape(&rest[..next]);
            rest = &rest[next..];
        }
    }
    if o.starts_with('.') || o.starts_with('\'') {
        o.insert_str(0, "\\&");
    }
    o
}

/// A line of a code block, as it is.
fn literal(line: &str) -> String {
    let e = escape(line);
    if e.starts_with('.') || e.starts_with('\'') {
        format!("\\&{e}")
    } else {
        e
    }
}

/// Text inside `.SH "..."`.
fn quoted(s: &str) -> String {
    inline(s).replace('"', "\\(dq")
}

/// Backslashes, and characters beyond ASCII as groff's Unicode escapes.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o += "\\e",
            '-' => o += "\\-",
            c if c.is_ascii() => o.push(c),
            c => o += &format!("\\[u{:04X}]", c as u32),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_man_macros() {
        let r = page(
            "noise",
            "Noise",
            "# Noise\n\nSome `code` and **bold**, [a link](x.md).\n\n## Part\n\n- one\n- two\n\n```sh\n.hidden \\ x\n```\n\n| a | b |\n|---|---|\n| `k` | v \\| w |\n",
        );
        assert!(r.starts_with(".TH \"perfbisect\\-guide\\-noise\" 7"), "{r}");
        assert!(
            r.contains("Some \\fBcode\\fR and \\fBbold\\fR, a link."),
            "{r}"
        );
        assert!(r.contains(".SH \"Part\"\n.IP \"\\(bu\" 4\none\n"), "{r}");
        assert!(r.contains(".nf\n\\&.hidden \\e x\n.fi"), "{r}");
        assert!(r.contains(".TP\n\\fBk\\fR\nb: v | w\n"), "{r}");
    }
}
