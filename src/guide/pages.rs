//! The pages of the guide, in the order `perfbisect guide` lists them.

/// One page: its name (`perfbisect guide NAME`, `src/guide/NAME.md`), a line saying what it is
/// for, and its Markdown.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub name: &'static str,
    pub about: &'static str,
    pub text: &'static str,
}

impl Page {
    /// The page's title: its first heading, without the `# `.
    pub fn title(&self) -> &'static str {
        self.text
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .unwrap_or(self.name)
    }

    /// Its file in the repository, relative to the crate's top directory.
    pub fn file(&self) -> String {
        format!("src/guide/{}.md", self.name)
    }
}

macro_rules! page {
    ($name:literal, $about:literal) => {
        Page {
            name: $name,
            about: $about,
            text: include_str!(concat!($name, ".md")),
        }
    };
}

/// Every page: tasks first, then the references.
pub const PAGES: &[Page] = &[
    page!(
        "first-search",
        "your first search on your own project: config init, check, find, report"
    ),
    page!(
        "finding",
        "how find decides: the search, merges, submodules, parallel builds, git bisect run, exit codes"
    ),
    page!(
        "noise",
        "noise, instruction counts and quiet runs; compare, calibrate, undecided steps"
    ),
    page!(
        "why",
        "why the culprit moved: a Cachegrind profile of both sides"
    ),
    page!(
        "reports",
        "reports for an issue, plots, the HTML site, --attach, exports"
    ),
    page!(
        "cron",
        "cron rounds, gaps, shards, the cache and the nightly triage"
    ),
    page!(
        "history",
        "another tool's history (benchmark-action, asv, pytest-benchmark, BMF, hyperfine) imported and searched"
    ),
    page!(
        "rust",
        "Rust projects ([build] cargo) and benchmark harnesses' numbers"
    ),
    page!(
        "curl",
        "curl's suite (scripts/curl) and its worked examples on curl's history"
    ),
    page!(
        "autotools",
        "autotools projects with submodules: config init, version stamps, pristine checks, a night of shards (jq)"
    ),
    page!(
        "troubleshooting",
        "the messages perfbisect prints: what each means and what to do"
    ),
    page!("config", "reference: every configuration key"),
    page!(
        "commands",
        "reference: every command and option (the text of --help)"
    ),
    page!("json", "reference: the JSON each command prints"),
    page!(
        "benchmarks",
        "perfbisect's own benchmarks, as the scripts last measured them"
    ),
    page!(
        "internals",
        "how perfbisect works inside: its promises, the tests, the source"
    ),
];

/// The page called `name`.
pub fn page(name: &str) -> Option<&'static Page> {
    PAGES.iter().find(|p| p.name == name)
}
