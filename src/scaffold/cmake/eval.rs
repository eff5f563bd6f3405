//! What a default configure of a CMake project does, as far as it decides which programs get
//! built: the files are read in CMake's order (`add_subdirectory` and `include` where they
//! stand), variables and options are kept with their scopes, and each `if` is decided the way
//! CMake would on this machine (Linux, the options' defaults, the build command's `-D`
//! values), or left undecided where only running the compiler or finding a package could tell
//! (a compiler check, `find_package`). Nothing is configured or built.

use std::collections::HashMap;
use std::path::Path;

use super::parse::{commands, Command, Token};

/// What keeps a target out of the default build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// A variable the user sets with `-DNAME=ON` (or `OFF`): an option, or a variable no file
    /// sets.
    Set(String, bool),
    /// A condition only configuring on a machine decides (a compiler check, a package
    /// found), or one that is false here (another platform): its text, and what sets it.
    When(String, Option<String>),
    /// `EXCLUDE_FROM_ALL`: built only when asked for by name.
    Excluded,
}

impl Gate {
    /// As a warning says it: "with `FUZZER=ON`", "when `CMAKE_C_COMPILER_ID STREQUAL Clang`".
    pub fn describe(&self) -> String {
        match self {
            Gate::Set(name, on) => format!("with `{name}={}`", if *on { "ON" } else { "OFF" }),
            Gate::When(text, None) => format!("when `{text}`"),
            Gate::When(text, Some(why)) => format!("when `{text}` ({why})"),
            Gate::Excluded => "when asked for by name (EXCLUDE_FROM_ALL)".to_string(),
        }
    }
}

/// Whether a default configure builds something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Truth {
    Yes,
    /// Not: what would make it yes.
    No(Vec<Gate>),
    /// Only configuring on a machine can tell: what it hangs on.
    Unsure(Vec<Gate>),
}

impl Truth {
    fn and(self, other: Truth) -> Truth {
        match (self, other) {
            (Truth::Yes, t) | (t, Truth::Yes) => t,
            (Truth::No(mut a), Truth::No(b) | Truth::Unsure(b))
            | (Truth::Unsure(b), Truth::No(mut a)) => {
                merge(&mut a, b);
                Truth::No(a)
            }
            (Truth::Unsure(mut a), Truth::Unsure(b)) => {
                merge(&mut a, b);
                Truth::Unsure(a)
            }
        }
    }

    fn or(self, other: Truth) -> Truth {
        match (self, other) {
            (Truth::Yes, _) | (_, Truth::Yes) => Truth::Yes,
            (Truth::No(a), Truth::No(_)) => Truth::No(a),
            (Truth::Unsure(a), _) | (_, Truth::Unsure(a)) => Truth::Unsure(a),
        }
    }

    /// What keeps it out of the default build (nothing when built).
    pub fn gates(&self) -> &[Gate] {
        match self {
            Truth::Yes => &[],
            Truth::No(g) | Truth::Unsure(g) => g,
        }
    }
}

fn merge(a: &mut Vec<Gate>, b: Vec<Gate>) {
    for g in b {
        if !a.contains(&g) {
            a.push(g);
        }
    }
}

/// A variable's value as far as it can be known before configuring.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    Str(String),
    /// Set by a check or a search (`check_c_compiler_flag`, `find_package`), or under a
    /// condition that could not be decided: why.
    Unsure(String),
}

/// CMake's false constants (and an empty or `*-NOTFOUND` value).
fn falsy(v: &str) -> bool {
    let u = v.to_ascii_uppercase();
    matches!(
        u.as_str(),
        "" | "0" | "OFF" | "NO" | "FALSE" | "N" | "IGNORE" | "NOTFOUND"
    ) || u.ends_with("-NOTFOUND")
}

/// CMake's true constants (and non-zero numbers).
fn truthy_constant(v: &str) -> bool {
    matches!(v.to_ascii_uppercase().as_str(), "ON" | "YES" | "TRUE" | "Y")
        || v.parse::<f64>().is_ok_and(|n| n != 0.0)
}

/// Platform variables on this machine (Linux); `None` for others.
fn platform(name: &str) -> Option<bool> {
    match name {
        "UNIX" | "LINUX" | "CMAKE_HOST_UNIX" | "CMAKE_HOST_LINUX" => Some(true),
        "WIN32"
        | "APPLE"
        | "MSVC"
        | "MINGW"
        | "CYGWIN"
        | "MSYS"
        | "IOS"
        | "ANDROID"
        | "EMSCRIPTEN"
        | "XCODE"
        | "BORLAND"
        | "WATCOM"
        | "CMAKE_HOST_WIN32"
        | "CMAKE_HOST_APPLE"
        | "CMAKE_CROSSCOMPILING"
        | "BUILD_SHARED_LIBS" => Some(false),
        _ => None,
    }
}

/// Variables only the compiler's or a package's presence decides.
fn compiler_var(name: &str) -> bool {
    name.starts_with("CMAKE_") && name.contains("COMPILER") || name.starts_with("MSVC_")
}

/// An executable target a configure may create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// Its name (`None`: made of a variable, e.g. inside a `foreach`).
    pub name: Option<String>,
    /// The directory of its CMakeLists.txt, relative to the top ("" for the top).
    pub dir: String,
    /// Where the build puts it, when `CMAKE_RUNTIME_OUTPUT_DIRECTORY` says (relative to the
    /// top, below `build/`).
    pub out_dir: Option<String>,
    pub file: String,
    pub line: usize,
    pub sources: Vec<String>,
    pub truth: Truth,
}

/// One `if` block (or a loop, or a function body, whose commands are not run now).
enum Frame {
    /// The conditions of its branches so far, and whether the current branch runs.
    If {
        conds: Vec<Vec<Token>>,
        now: Truth,
    },
    Loop,
    Skip,
}

/// The reader: the top directory, `-D` values, variables (directory scope) and the cache.
pub struct Reader<'a> {
    root: &'a Path,
    defines: HashMap<String, String>,
    vars: HashMap<String, Val>,
    cache: HashMap<String, Val>,
    /// Names declared by `option()` (and the `-D` values): what a user sets.
    options: Vec<String>,
    /// Library and executable targets so far (for `if(TARGET x)`).
    names: Vec<String>,
    pub targets: Vec<Declared>,
    files: usize,
    project: Option<String>,
}

impl<'a> Reader<'a> {
    /// A reader of the project in `root`, configured with `defines` (`-DNAME=VALUE`).
    pub fn new(root: &'a Path, defines: &[(String, String)]) -> Reader<'a> {
        let mut r = Reader {
            root,
            defines: defines.iter().cloned().collect(),
            vars: HashMap::new(),
            cache: HashMap::new(),
            options: defines.iter().map(|(k, _)| k.clone()).collect(),
            names: Vec::new(),
            targets: Vec::new(),
            files: 0,
            project: None,
        };
        let top = root.to_string_lossy().into_owned();
        for (k, v) in [
            ("CMAKE_SOURCE_DIR", top.as_str()),
            ("CMAKE_BINARY_DIR", "build"),
            ("PROJECT_BINARY_DIR", "build"),
            ("CMAKE_SYSTEM_NAME", "Linux"),
            ("CMAKE_HOST_SYSTEM_NAME", "Linux"),
        ] {
            r.vars.insert(k.into(), Val::Str(v.into()));
        }
        r
    }

    /// The name of the top project (`project(NAME ...)`), once read.
    pub fn project_name(&self) -> Option<String> {
        self.project.clone()
    }

    /// Read the CMakeLists.txt of directory `dir` (relative to the top) in a scope of its own,
    /// everything in it under `outer`.
    pub fn directory(&mut self, dir: &str, outer: &Truth) {
        if self.files >= 128 {
            return;
        }
        let path = self.root.join(dir).join("CMakeLists.txt");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        self.files += 1;
        let saved = self.vars.clone();
        let src = self.root.join(dir).to_string_lossy().into_owned();
        self.vars
            .insert("CMAKE_CURRENT_SOURCE_DIR".into(), Val::Str(src.clone()));
        self.vars
            .insert("CMAKE_CURRENT_LIST_DIR".into(), Val::Str(src));
        let bin = if dir.is_empty() {
            "build".to_string()
        } else {
            format!("build/{dir}")
        };
        self.vars
            .insert("CMAKE_CURRENT_BINARY_DIR".into(), Val::Str(bin));
        let file = if dir.is_empty() {
            "CMakeLists.txt".to_string()
        } else {
            format!("{dir}/CMakeLists.txt")
        };
        self.run(&commands(&text), dir, &file, outer);
        self.vars = saved;
    }

    /// Run `cmds` of `file` (in directory `dir`) under `outer`.
    fn run(&mut self, cmds: &[Command], dir: &str, file: &str, outer: &Truth) {
        let mut frames: Vec<Frame> = Vec::new();
        for c in cmds {
            let skipping = frames.iter().any(|f| matches!(f, Frame::Skip));
            match c.name.as_str() {
                "function" | "macro" => {
                    frames.push(Frame::Skip);
                    continue;
                }
                "endfunction" | "endmacro" => {
                    if matches!(frames.last(), Some(Frame::Skip)) {
                        frames.pop();
                    }
                    continue;
                }
                _ if skipping => continue,
                "if" => {
                    let now = self.condition(&c.args, false);
                    frames.push(Frame::If {
                        conds: vec![c.args.clone()],
                        now,
                    });
                    continue;
                }
                "elseif" | "else" => {
                    if let Some(Frame::If { conds, now }) = frames.last_mut() {
                        // NOT (c1 OR c2 ...) AND this branch's own condition: each earlier
                        // condition negated names what turning it off takes.
                        let mut t = if c.name == "elseif" {
                            self.condition(&c.args, false)
                        } else {
                            Truth::Yes
                        };
                        for cond in conds.iter() {
                            t = t.and(self.condition(cond, true));
                        }
                        *now = t;
                        conds.push(c.args.clone());
                    }
                    continue;
                }
                "endif" => {
                    if matches!(frames.last(), Some(Frame::If { .. })) {
                        frames.pop();
                    }
                    continue;
                }
                "foreach" | "while" => {
                    frames.push(Frame::Loop);
                    continue;
                }
                "endforeach" | "endwhile" => {
                    if matches!(frames.last(), Some(Frame::Loop)) {
                        frames.pop();
                    }
                    continue;
                }
                _ => {}
            }
            let mut here = outer.clone();
            for f in &frames {
                if let Frame::If { now, .. } = f {
                    here = here.and(now.clone());
                }
            }
            let in_loop = frames.iter().any(|f| matches!(f, Frame::Loop));
            if c.name == "return" && here == Truth::Yes && !in_loop {
                return;
            }
            self.command(c, dir, file, &here, in_loop);
        }
    }

    /// One command that is not a block's, run under `here`.
    fn command(&mut self, c: &Command, dir: &str, file: &str, here: &Truth, in_loop: bool) {
        let words: Vec<String> = c.args.iter().map(|t| self.expand(&t.text)).collect();
        let first = words.first().cloned().unwrap_or_default();
        match c.name.as_str() {
            "project" if !first.is_empty() => {
                let top = self.project.is_none();
                if top {
                    self.vars
                        .insert("CMAKE_PROJECT_NAME".into(), Val::Str(first.clone()));
                    self.project = Some(first.clone());
                }
                let top_level = top && dir.is_empty();
                let flag = Val::Str(if top_level { "ON" } else { "OFF" }.into());
                self.vars
                    .insert("PROJECT_NAME".into(), Val::Str(first.clone()));
                self.vars
                    .insert("PROJECT_IS_TOP_LEVEL".into(), flag.clone());
                self.vars.insert(format!("{first}_IS_TOP_LEVEL"), flag);
                let src = self.root.join(dir).to_string_lossy().into_owned();
                self.vars.insert("PROJECT_SOURCE_DIR".into(), Val::Str(src));
            }
            "option" if !first.is_empty() => {
                let default = c.args.get(2).map_or(Truth::No(Vec::new()), |t| {
                    self.condition(std::slice::from_ref(t), false)
                });
                let value = match default.and(here.clone()) {
                    Truth::Yes => Val::Str("ON".into()),
                    Truth::No(_) => Val::Str("OFF".into()),
                    Truth::Unsure(_) => Val::Unsure(format!("option {first}'s default")),
                };
                self.option(&first, value);
            }
            "cmake_dependent_option" if words.len() >= 5 => {
                let depends = self.condition(&split_list(&words[3]), false);
                let value = match depends {
                    Truth::Yes => Val::Str(words[2].clone()),
                    Truth::No(_) => Val::Str(words[4].clone()),
                    Truth::Unsure(_) => Val::Unsure(format!("option {first}'s dependencies")),
                };
                self.option(&first, value);
            }
            "set" if !first.is_empty() && !first.contains('$') => {
                self.set(&first, &words[1..], here, in_loop);
            }
            "unset" => {
                self.vars.remove(&first);
            }
            "list" if words.len() >= 3 && first.eq_ignore_ascii_case("APPEND") => {
                let old = match self.vars.get(&words[1]) {
                    Some(Val::Str(s)) if !s.is_empty() => format!("{s};"),
                    _ => String::new(),
                };
                let value = format!("{old}{}", words[2..].join(";"));
                self.vars.insert(words[1].clone(), Val::Str(value));
            }
            "include" if !first.is_empty() => self.include(&first, dir, file, here),
            "add_subdirectory" if !first.is_empty() && !first.contains('$') => {
                let excluded = c.args.iter().any(|t| t.is("EXCLUDE_FROM_ALL"));
                let mut under = here.clone();
                if excluded {
                    under = under.and(Truth::No(vec![Gate::Excluded]));
                }
                if let Some(sub) = subdir(self.root, dir, &first) {
                    self.directory(&sub, &under);
                }
            }
            "add_executable" if !c.args.is_empty() => self.executable(c, &words, dir, file, here),
            "add_library" | "add_custom_target" if !first.is_empty() => {
                self.names.push(first);
            }
            "find_package" if !first.is_empty() => {
                let why = format!("found by find_package({first})");
                for v in [
                    format!("{first}_FOUND"),
                    format!("{}_FOUND", first.to_uppercase()),
                ] {
                    self.vars.insert(v, Val::Unsure(why.clone()));
                }
            }
            name if name.starts_with("find_") && !first.is_empty() => {
                self.vars
                    .insert(first, Val::Unsure(format!("found by {name}")));
            }
            "check_language" if !first.is_empty() => {
                self.vars.insert(
                    format!("CMAKE_{}_COMPILER", first.to_uppercase()),
                    Val::Unsure("set by check_language, a compiler check".into()),
                );
            }
            name if name.starts_with("check_") => {
                // The result variable: after RESULT, else the last argument.
                let result = words
                    .iter()
                    .position(|w| w == "RESULT")
                    .and_then(|i| words.get(i + 1))
                    .or(words.last());
                if let Some(v) = result.filter(|v| !v.contains('$')) {
                    self.vars.insert(
                        v.clone(),
                        Val::Unsure(format!("set by {name}, a compiler check")),
                    );
                }
            }
            _ => {}
        }
    }

    /// `option(NAME ...)`: a cache entry unless `-D` or an earlier one set it.
    fn option(&mut self, name: &str, value: Val) {
        if !self.options.iter().any(|o| o == name) {
            self.options.push(name.to_string());
        }
        if self.defines.contains_key(name) || self.cache.contains_key(name) {
            return;
        }
        self.cache.insert(name.to_string(), value);
    }

    /// `set(NAME value... [CACHE type doc [FORCE]] [PARENT_SCOPE])` under `here`.
    fn set(&mut self, name: &str, rest: &[String], here: &Truth, in_loop: bool) {
        let end = rest
            .iter()
            .position(|w| w == "CACHE" || w == "PARENT_SCOPE")
            .unwrap_or(rest.len());
        if rest.get(end).is_some_and(|w| w == "PARENT_SCOPE") {
            return;
        }
        let cache = rest.get(end).is_some_and(|w| w == "CACHE");
        let force = cache && rest.iter().any(|w| w == "FORCE");
        let joined = rest[..end].join(";");
        let value = if joined.contains("${") || in_loop {
            Val::Unsure(format!("{name} is set from other variables"))
        } else {
            Val::Str(joined)
        };
        let value = match here {
            Truth::Yes => value,
            Truth::No(_) => return,
            Truth::Unsure(_) => Val::Unsure(format!("{name} is set under a condition")),
        };
        if cache {
            if !self.options.iter().any(|o| o == name) {
                self.options.push(name.to_string());
            }
            if force || !(self.defines.contains_key(name) || self.cache.contains_key(name)) {
                self.cache.insert(name.to_string(), value);
            }
        } else {
            self.vars.insert(name.to_string(), value);
        }
    }

    /// `include(X)`: CTest's `BUILD_TESTING` option, or a file of the project (a path, or a
    /// module in `CMAKE_MODULE_PATH`) read where it stands, in the same scope.
    fn include(&mut self, what: &str, dir: &str, file: &str, here: &Truth) {
        if what == "CTest" {
            self.option("BUILD_TESTING", Val::Str("ON".into()));
            return;
        }
        let mut places = vec![self.root.join(dir).join(what)];
        if !what.contains('.') {
            if let Some(Val::Str(paths)) = self.vars.get("CMAKE_MODULE_PATH") {
                for p in paths.split(';').filter(|p| !p.is_empty()) {
                    places.push(Path::new(p).join(format!("{what}.cmake")));
                }
            }
        }
        let Some(path) = places.into_iter().find(|p| {
            p.is_file()
                && p.canonicalize()
                    .is_ok_and(|c| c.starts_with(self.root.canonicalize().unwrap_or_default()))
        }) else {
            return;
        };
        if self.files >= 128 {
            return;
        }
        self.files += 1;
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        let name = path
            .strip_prefix(self.root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| file.to_string());
        self.run(&commands(&text), dir, &name, here);
    }

    /// `add_executable(NAME [WIN32] [MACOSX_BUNDLE] [EXCLUDE_FROM_ALL] sources...)`.
    fn executable(&mut self, c: &Command, words: &[String], dir: &str, file: &str, here: &Truth) {
        if c.args.iter().any(|t| t.is("IMPORTED") || t.is("ALIAS")) {
            return;
        }
        let name = &words[0];
        self.names.push(name.clone());
        let mut truth = here.clone();
        if c.args.iter().any(|t| t.is("EXCLUDE_FROM_ALL")) {
            truth = truth.and(Truth::No(vec![Gate::Excluded]));
        }
        let out_dir = match self
            .vars
            .get("CMAKE_RUNTIME_OUTPUT_DIRECTORY")
            .or(self.cache.get("CMAKE_RUNTIME_OUTPUT_DIRECTORY"))
        {
            Some(Val::Str(d)) if d == "build" || d.starts_with("build/") => {
                Some(d.trim_end_matches('/').to_string())
            }
            _ => None,
        };
        let sources = words[1..]
            .iter()
            .filter(|s| !s.contains('$') && s.contains('.'))
            .map(|s| {
                if dir.is_empty() {
                    s.clone()
                } else {
                    format!("{dir}/{s}")
                }
            })
            .collect();
        self.targets.push(Declared {
            name: (!name.contains('$') && !name.is_empty()).then(|| name.clone()),
            dir: dir.to_string(),
            out_dir,
            file: file.to_string(),
            line: c.line,
            sources,
            truth,
        });
    }

    /// `${NAME}` references replaced by their values, an unset one by nothing (as CMake
    /// does); one whose value cannot be known stays as written.
    fn expand(&self, text: &str) -> String {
        static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r"\$\{([A-Za-z0-9_.+-]+)\}").expect("valid regex")
        });
        if !text.contains("${") {
            return text.to_string();
        }
        let mut out = text.to_string();
        for _ in 0..4 {
            let next = RE
                .replace_all(&out, |c: &regex::Captures<'_>| match self.value(&c[1]) {
                    Some(Val::Str(s)) => s,
                    Some(Val::Unsure(_)) => c[0].to_string(),
                    None => String::new(),
                })
                .into_owned();
            if next == out {
                break;
            }
            out = next;
        }
        out
    }

    fn value(&self, name: &str) -> Option<Val> {
        if let Some(v) = self.vars.get(name) {
            return Some(v.clone());
        }
        if let Some(v) = self.defines.get(name) {
            return Some(Val::Str(v.clone()));
        }
        self.cache.get(name).cloned()
    }

    /// How an `if(...)` condition (`NOT` it, with `neg`) comes out on a default configure here.
    pub fn condition(&self, args: &[Token], neg: bool) -> Truth {
        let mut pos = 0;
        let e = parse_or(args, &mut pos);
        self.eval(&e, neg)
    }

    fn eval(&self, e: &Expr, neg: bool) -> Truth {
        match e {
            Expr::Or(parts) | Expr::And(parts) => {
                let any = matches!(e, Expr::Or(_)) != neg;
                let mut it = parts.iter().map(|p| self.eval(p, neg));
                let first = it.next().unwrap_or(Truth::Yes);
                it.fold(first, |acc, t| if any { acc.or(t) } else { acc.and(t) })
            }
            Expr::Not(inner) => self.eval(inner, !neg),
            Expr::Term(t) => self.term(t, neg),
            Expr::Test(tokens) => {
                let text = tokens
                    .iter()
                    .map(|t| {
                        if t.quoted {
                            format!("\"{}\"", t.text)
                        } else {
                            t.text.clone()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                let text = if neg { format!("NOT {text}") } else { text };
                match self.test(tokens) {
                    Some(v) if v != neg => Truth::Yes,
                    Some(_) => Truth::No(vec![Gate::When(text, None)]),
                    None => Truth::Unsure(vec![Gate::When(text, None)]),
                }
            }
        }
    }

    /// A lone word: a constant, or a variable's value.
    fn term(&self, t: &Token, neg: bool) -> Truth {
        let text = self.expand(&t.text);
        let yes = |v: bool, gate: Gate| {
            if v != neg {
                Truth::Yes
            } else {
                Truth::No(vec![gate])
            }
        };
        if t.quoted || text.contains("${") {
            if text.contains("${") {
                return Truth::Unsure(vec![Gate::When(t.text.clone(), None)]);
            }
            return yes(truthy_constant(&text), Gate::When(t.text.clone(), None));
        }
        if truthy_constant(&text) || falsy(&text) && text.chars().all(|c| !c.is_ascii_lowercase()) {
            return yes(truthy_constant(&text), Gate::When(text.clone(), None));
        }
        let user = self.options.contains(&text) || !self.known(&text);
        let gate = |on: bool| {
            if user {
                Gate::Set(text.clone(), on)
            } else {
                Gate::When(text.clone(), None)
            }
        };
        match self.value(&text) {
            Some(Val::Str(v)) => {
                let on = !falsy(&v);
                yes(on, gate(!on))
            }
            Some(Val::Unsure(why)) => Truth::Unsure(vec![Gate::When(
                if neg {
                    format!("NOT {text}")
                } else {
                    text.clone()
                },
                Some(why),
            )]),
            None => match platform(&text) {
                Some(v) => yes(v, Gate::When(text.clone(), None)),
                None if compiler_var(&text) => Truth::Unsure(vec![Gate::When(
                    text.clone(),
                    Some("a compiler check".into()),
                )]),
                // Unset: false, until `-DNAME=ON` sets it.
                None => yes(false, Gate::Set(text.clone(), true)),
            },
        }
    }

    /// Whether a variable is one CMake or the project sets (not one a user would pass).
    fn known(&self, name: &str) -> bool {
        self.vars.contains_key(name) || platform(name).is_some() || compiler_var(name)
    }

    /// A unary or binary test, when its answer can be known here.
    fn test(&self, tokens: &[Token]) -> Option<bool> {
        let operand = |t: &Token| -> Option<String> {
            let text = self.expand(&t.text);
            if text.contains("${") {
                return None;
            }
            if t.quoted {
                return Some(text);
            }
            match self.value(&text) {
                Some(Val::Str(v)) => Some(v),
                Some(Val::Unsure(_)) => None,
                None if compiler_var(&text) => None,
                None => Some(text),
            }
        };
        match tokens {
            [op, arg] => {
                let what = self.expand(&arg.text);
                match op.text.to_ascii_uppercase().as_str() {
                    "DEFINED" => match self.value(&what) {
                        Some(Val::Unsure(_)) => None,
                        v => Some(v.is_some()),
                    },
                    "TARGET" => self.names.contains(&what).then_some(true),
                    "EXISTS" | "IS_DIRECTORY" => {
                        let p = Path::new(&what);
                        let inside =
                            p.is_absolute() && p.starts_with(self.root) && !what.contains("${");
                        inside.then(|| p.exists())
                    }
                    _ => None,
                }
            }
            [a, op, b] => {
                let (x, y) = (operand(a)?, operand(b)?);
                let op = op.text.to_ascii_uppercase();
                match op.as_str() {
                    "STREQUAL" => Some(x == y),
                    "MATCHES" => regex::Regex::new(&y).ok().map(|r| r.is_match(&x)),
                    "EQUAL" => Some(x.trim().parse::<f64>().ok()? == y.trim().parse::<f64>().ok()?),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// A `;`-list as tokens (`cmake_dependent_option`'s conditions).
fn split_list(s: &str) -> Vec<Token> {
    s.split([';', ' '])
        .filter(|w| !w.is_empty())
        .map(|w| Token {
            text: w.to_string(),
            quoted: false,
        })
        .collect()
}

/// The directory `arg` of `add_subdirectory` in `dir`, relative to the top, when it lies
/// inside the project.
fn subdir(root: &Path, dir: &str, arg: &str) -> Option<String> {
    let p = if Path::new(arg).is_absolute() {
        Path::new(arg).strip_prefix(root).ok()?.to_path_buf()
    } else {
        Path::new(dir).join(arg)
    };
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// A condition as CMake groups it: OR of ANDs of (NOT) terms, tests and parentheses.
#[derive(Debug)]
enum Expr {
    Or(Vec<Expr>),
    And(Vec<Expr>),
    Not(Box<Expr>),
    Term(Token),
    /// `DEFINED X`, `A STREQUAL B`, ...: decided by [`Reader::test`].
    Test(Vec<Token>),
}

const UNARY: &[&str] = &[
    "EXISTS",
    "COMMAND",
    "DEFINED",
    "TARGET",
    "POLICY",
    "TEST",
    "IS_DIRECTORY",
    "IS_ABSOLUTE",
    "IS_SYMLINK",
    "IS_READABLE",
    "IS_WRITABLE",
    "IS_EXECUTABLE",
];
const BINARY: &[&str] = &[
    "STREQUAL",
    "MATCHES",
    "EQUAL",
    "LESS",
    "GREATER",
    "LESS_EQUAL",
    "GREATER_EQUAL",
    "STRLESS",
    "STRGREATER",
    "STRLESS_EQUAL",
    "STRGREATER_EQUAL",
    "VERSION_EQUAL",
    "VERSION_LESS",
    "VERSION_GREATER",
    "VERSION_LESS_EQUAL",
    "VERSION_GREATER_EQUAL",
    "IN_LIST",
    "PATH_EQUAL",
    "IS_NEWER_THAN",
];

fn is_any(t: &Token, words: &[&str]) -> bool {
    words.iter().any(|w| t.is(w))
}

fn parse_or(t: &[Token], pos: &mut usize) -> Expr {
    let mut parts = vec![parse_and(t, pos)];
    while *pos < t.len() && t[*pos].is("OR") {
        *pos += 1;
        parts.push(parse_and(t, pos));
    }
    if parts.len() == 1 {
        parts.pop().expect("one part")
    } else {
        Expr::Or(parts)
    }
}

fn parse_and(t: &[Token], pos: &mut usize) -> Expr {
    let mut parts = vec![parse_not(t, pos)];
    while *pos < t.len() && t[*pos].is("AND") {
        *pos += 1;
        parts.push(parse_not(t, pos));
    }
    if parts.len() == 1 {
        parts.pop().expect("one part")
    } else {
        Expr::And(parts)
    }
}

fn parse_not(t: &[Token], pos: &mut usize) -> Expr {
    if *pos < t.len() && t[*pos].is("NOT") {
        *pos += 1;
        return Expr::Not(Box::new(parse_not(t, pos)));
    }
    let Some(first) = t.get(*pos) else {
        return Expr::Term(Token {
            text: String::new(),
            quoted: true,
        });
    };
    if first.is("(") {
        *pos += 1;
        let e = parse_or(t, pos);
        if *pos < t.len() && t[*pos].is(")") {
            *pos += 1;
        }
        return e;
    }
    if is_any(first, UNARY) && *pos + 1 < t.len() {
        *pos += 2;
        return Expr::Test(t[*pos - 2..*pos].to_vec());
    }
    if t.get(*pos + 1).is_some_and(|op| is_any(op, BINARY)) && *pos + 2 < t.len() {
        *pos += 3;
        return Expr::Test(t[*pos - 3..*pos].to_vec());
    }
    *pos += 1;
    Expr::Term(first.clone())
}
