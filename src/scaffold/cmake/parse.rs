//! CMake's language as far as `config init` reads it: the commands of a file with their
//! arguments and lines (line and bracket comments skipped, quoted and bracket arguments
//! kept whole, parentheses nested), and the arguments of one command as tokens.

/// One command invocation: `name(args)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Lowercased: CMake's command names are case-insensitive.
    pub name: String,
    /// The tokens between the parentheses.
    pub args: Vec<Token>,
    /// 1-based line of its name.
    pub line: usize,
}

/// One argument, or a parenthesis of an `if` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    /// Quoted (`"..."`) or a bracket argument: a string, never a variable's name.
    pub quoted: bool,
}

impl Token {
    /// An unquoted word equal to `w`, ignoring case (`AND`, `NOT`, `EXCLUDE_FROM_ALL`).
    pub fn is(&self, w: &str) -> bool {
        !self.quoted && self.text.eq_ignore_ascii_case(w)
    }
}

/// The commands of a CMake file, in order.
pub fn commands(text: &str) -> Vec<Command> {
    let s: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '#' {
            i = skip_comment(&s, i, &mut line);
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            let name: String = s[start..i].iter().collect();
            let mut j = i;
            while j < s.len() && (s[j] == ' ' || s[j] == '\t') {
                j += 1;
            }
            if j < s.len() && s[j] == '(' {
                let at = line;
                let (args, end) = arguments(&s, j + 1, &mut line);
                out.push(Command {
                    name: name.to_ascii_lowercase(),
                    args,
                    line: at,
                });
                i = end;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The length of `[`, `=`*, `[` at `i` (a bracket's opening), counting its `=`.
fn bracket_open(s: &[char], i: usize) -> Option<(usize, usize)> {
    if s.get(i) != Some(&'[') {
        return None;
    }
    let mut j = i + 1;
    while s.get(j) == Some(&'=') {
        j += 1;
    }
    (s.get(j) == Some(&'[')).then_some((j + 1 - i, j - i - 1))
}

/// The index after the bracket closing `]`, `=`×`eq`, `]` from `i` on (the end of the text
/// when it is not closed), counting lines.
fn bracket_close(s: &[char], mut i: usize, eq: usize, line: &mut usize) -> (String, usize) {
    let start = i;
    while i < s.len() {
        if s[i] == ']'
            && s[i + 1..].iter().take(eq).all(|&c| c == '=')
            && s.get(i + 1 + eq) == Some(&']')
        {
            return (s[start..i].iter().collect(), i + 2 + eq);
        }
        if s[i] == '\n' {
            *line += 1;
        }
        i += 1;
    }
    (s[start..].iter().collect(), s.len())
}

/// Past the comment starting at `i` (`#` to the end of the line, or `#[[ ... ]]`).
fn skip_comment(s: &[char], i: usize, line: &mut usize) -> usize {
    if let Some((len, eq)) = bracket_open(s, i + 1) {
        return bracket_close(s, i + 1 + len, eq, line).1;
    }
    let mut j = i;
    while j < s.len() && s[j] != '\n' {
        j += 1;
    }
    j
}

/// The tokens of an argument list starting after its `(`, and the index after its `)`.
fn arguments(s: &[char], mut i: usize, line: &mut usize) -> (Vec<Token>, usize) {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<Token>| {
        if !word.is_empty() {
            out.push(Token {
                text: std::mem::take(word),
                quoted: false,
            });
        }
    };
    while i < s.len() {
        let c = s[i];
        match c {
            '"' => {
                flush(&mut word, &mut out);
                let mut text = String::new();
                i += 1;
                while i < s.len() && s[i] != '"' {
                    if s[i] == '\\' && i + 1 < s.len() {
                        text.push(s[i]);
                        i += 1;
                    }
                    if s[i] == '\n' {
                        *line += 1;
                    }
                    text.push(s[i]);
                    i += 1;
                }
                out.push(Token { text, quoted: true });
                i += 1;
            }
            '#' => {
                flush(&mut word, &mut out);
                i = skip_comment(s, i, line);
            }
            '[' if word.is_empty() && bracket_open(s, i).is_some() => {
                let (len, eq) = bracket_open(s, i).expect("checked");
                let (text, end) = bracket_close(s, i + len, eq, line);
                out.push(Token { text, quoted: true });
                i = end;
            }
            '(' => {
                flush(&mut word, &mut out);
                depth += 1;
                out.push(Token {
                    text: "(".into(),
                    quoted: false,
                });
                i += 1;
            }
            ')' => {
                flush(&mut word, &mut out);
                if depth == 0 {
                    return (out, i + 1);
                }
                depth -= 1;
                out.push(Token {
                    text: ")".into(),
                    quoted: false,
                });
                i += 1;
            }
            c if c.is_whitespace() => {
                if c == '\n' {
                    *line += 1;
                }
                flush(&mut word, &mut out);
                i += 1;
            }
            '\\' if i + 1 < s.len() => {
                word.push(c);
                word.push(s[i + 1]);
                i += 2;
            }
            c => {
                word.push(c);
                i += 1;
            }
        }
    }
    flush(&mut word, &mut out);
    (out, s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_with_comments_quotes_brackets_and_nested_parentheses() {
        let text = "# a comment with add_executable(no)\n\
            project(demo C) #[[ a bracket\ncomment add_executable(no2) ]]\n\
            if((A OR B) AND NOT \"C D\")\n\
              add_executable(tool  # inline\n    main.c [[x)y]])\n\
            endif ()\nSET(X \"a(b\" CACHE STRING \"doc\")\n";
        let cs = commands(text);
        let names: Vec<(&str, usize)> = cs.iter().map(|c| (c.name.as_str(), c.line)).collect();
        assert_eq!(
            names,
            [
                ("project", 2),
                ("if", 4),
                ("add_executable", 5),
                ("endif", 7),
                ("set", 8)
            ]
        );
        let words = |c: &Command| c.args.iter().map(|t| t.text.clone()).collect::<Vec<_>>();
        assert_eq!(
            words(&cs[1]),
            ["(", "A", "OR", "B", ")", "AND", "NOT", "C D"]
        );
        assert!(cs[1].args[7].quoted && cs[1].args[5].is("and"));
        assert_eq!(words(&cs[2]), ["tool", "main.c", "x)y"]);
        assert_eq!(words(&cs[4]), ["X", "a(b", "CACHE", "STRING", "doc"]);
    }
}
