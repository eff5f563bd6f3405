//! `perfbisect triage TESTS [RANGE]`, the nightly perf sheriff: measure what the round needs
//! (the newest commit), find the change points of every test over its stored and imported
//! history, search each one not settled yet inside its gap — one search per gap for all the
//! tests that moved there, on one set of builds (the cache serves every test, and the search
//! prefers commits already built) — confirm each culprit as `find` does, and keep the
//! results per culprit commit in the cache ([`crate::store::findings`]); with `--attach`, one issue
//! per new culprit, a comment when tests join it or when a later step fixes it. Idempotent
//! and resumable: a second run with nothing new posts nothing.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::bisect::Outcome as Verdict;
use crate::config::Test;
use crate::pipeline::workspace::Workspace;
pub use crate::report::triage::{Left, Posted};
use crate::store::findings::{self, Findings, Post, State, TestStep};

/// What `triage` was asked for.
pub struct Options<'a> {
    /// `all`, or test names separated by commas.
    pub tests: &'a str,
    /// The history to look at (default: every stored commit of the tests, up to HEAD).
    pub range: Option<&'a str>,
    pub jobs: usize,
    /// Budget of a nightly job: no new search starts once this many builds were made or this
    /// much time went by; what is left is said and kept for the next run.
    pub max_builds: Option<usize>,
    pub max_time: Option<Duration>,
    /// Post to this repository (`OWNER/REPO`) with `gh`.
    pub attach: Option<String>,
    pub label: String,
    /// Say what would be posted, post nothing.
    pub dry_run: bool,
    /// The global options to repeat in reproduce commands.
    pub invocation: String,
}

/// What one `triage` did.
pub struct Outcome {
    /// Every finding kept, after this run.
    pub findings: Findings,
    /// The commits whose finding is new or changed this run.
    pub changed: Vec<String>,
    pub left: Vec<Left>,
    pub posted: Vec<Posted>,
    /// Posts that failed (left for the next run).
    pub failures: Vec<String>,
    /// Searches made, builds performed, runs stored, seconds.
    pub searches: usize,
    pub builds: usize,
    pub runs: usize,
    pub seconds: f64,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A change point of one test, in the gap between the last commit measured at the old level
/// and the first at the new one.
struct Gap {
    from: gix::ObjectId,
    to: gix::ObjectId,
    subject: String,
}

/// Run the triage on `ws` (opened with the cache lock: two triages at once take turns).
pub fn triage(ws: &Workspace, opts: &Options<'_>) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let tests: Vec<Test> = ws.config.select(opts.tests)?.into_iter().cloned().collect();
    let repo = opts.attach.as_deref().map(parse_repo).transpose()?;
    let file = findings::path(&ws.cache.root);
    let mut f = findings::load(&file)?;
    let before = f.clone();
    let mut out = Outcome {
        findings: Findings::default(),
        changed: Vec::new(),
        left: Vec::new(),
        posted: Vec::new(),
        failures: Vec::new(),
        searches: 0,
        builds: 0,
        runs: 0,
        seconds: 0.0,
    };
    // A dry run changes no finding and marks no gap searched: the next real run searches and
    // posts as if it had not run (what it measured stays in the store, as every run's does).
    let keep = |f: &Findings| {
        if opts.dry_run {
            Ok(())
        } else {
            findings::save(&file, f)
        }
    };
    let over_budget = |out: &Outcome| {
        opts.max_builds.is_some_and(|m| out.builds >= m)
            || opts.max_time.is_some_and(|t| started.elapsed() >= t)
    };

    // 1. The round: the newest commit measured for every test that has no number there.
    let newest = match opts.range {
        Some(r) => ws.repo.range(r)?.commits.last().map(|c| c.id),
        None => Some(ws.repo.head()?),
    };
    // (Only the tests with no number there: said only when there are some.)
    let mut unmeasured: Vec<&Test> = Vec::new();
    if let Some(id) = newest {
        for t in &tests {
            let key: [u8; 20] = id.as_bytes().try_into().unwrap_or([0; 20]);
            if !ws.samples_for(t, Some(&[id]))?.by_commit.contains_key(&key) {
                unmeasured.push(t);
            }
        }
    }
    if let Some(id) = newest.filter(|_| !unmeasured.is_empty() && !over_budget(&out)) {
        let names: Vec<&str> = unmeasured.iter().map(|t| t.name.as_str()).collect();
        ws.note(&format!(
            "perfbisect: triage: measuring the newest commit, {}, for {} (no numbers there yet)",
            crate::git::short(&id),
            names.join(", ")
        ));
        let names = names.join(",");
        let hex = id.to_string();
        let round = crate::jobs::run::Options {
            tests: &names,
            range: &hex,
            jobs: opts.jobs,
            shard: None,
            again: false,
            gaps: true,
            retry_failed: false,
            build_only: false,
        };
        let mut spent = crate::jobs::run::Spent::new(Instant::now());
        let counts = std::cell::Cell::new((0, 0));
        let keep = |s: &crate::jobs::run::Summary, _: Duration| {
            counts.set(s.counts());
            Ok(())
        };
        if crate::jobs::run::run_pass(ws, &round, true, &mut spent, &keep)? {
            crate::jobs::run::run_pass(ws, &round, false, &mut spent, &keep)?;
        }
        let (b, r) = counts.get();
        out.builds += b;
        out.runs += r;
    }

    // 2. Every test's change points not settled yet, grouped by gap.
    let mut groups: BTreeMap<(usize, String, String), (Gap, Vec<&Test>)> = BTreeMap::new();
    // Each commit's place in history, per test (for what fixed what).
    let mut order: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for t in &tests {
        let samples = ws.samples(t)?;
        let commits = match opts.range {
            Some(r) => ws.chain_commits(r)?.0,
            None => ws.commits(None, &samples)?,
        };
        let rows = crate::pipeline::history::rows(ws, &samples, commits);
        order.insert(
            t.name.clone(),
            rows.iter()
                .enumerate()
                .map(|(i, r)| (r.commit.id.to_string(), i))
                .collect(),
        );
        // Steps the stored runs cannot decide (cron rounds each at its own moment, too few runs)
        // are searched as the confirmed ones are: `find`'s interleaved runs decide them.
        let d = crate::pipeline::history::detection(t, &rows);
        let steps = d
            .points
            .iter()
            .map(|c| c.index)
            .chain(d.undecided.iter().map(|u| u.index));
        for index in steps {
            let Some(from) = rows[..index].iter().rev().find(|r| !r.values.is_empty()) else {
                continue;
            };
            let to = &rows[index];
            let (a, b) = (from.commit.id.to_string(), to.commit.id.to_string());
            if settled(&f, &t.name, &a, &b, &order[&t.name]) {
                continue;
            }
            let e = groups.entry((index, a, b)).or_insert_with(|| {
                (
                    Gap {
                        from: from.commit.id,
                        to: to.commit.id,
                        subject: to.commit.subject.clone(),
                    },
                    Vec::new(),
                )
            });
            e.1.push(t);
        }
    }
    // (The same gap of two tests is one key whatever index their rows give it.)
    let mut merged: Vec<(Gap, Vec<&Test>)> = Vec::new();
    for (_, (gap, ts)) in groups {
        match merged
            .iter_mut()
            .find(|(g, _)| g.from == gap.from && g.to == gap.to)
        {
            Some((_, all)) => all.extend(ts),
            None => merged.push((gap, ts)),
        }
    }

    // 3. One search per gap: the tests that moved there, one after another on the same builds.
    // Each culprit's reports by test: what an issue body shows under each test's name.
    let mut reports: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (gap, ts) in &merged {
        let spec = format!("{}..{}", gap.from, gap.to);
        let names: Vec<&str> = ts.iter().map(|t| t.name.as_str()).collect();
        for t in ts {
            if over_budget(&out) {
                out.left.push(Left {
                    test: t.name.clone(),
                    from: gap.from.to_string(),
                    to: gap.to.to_string(),
                });
                continue;
            }
            ws.note(&format!(
                "perfbisect: triage: searching {}..{} for {} ({} of the tests that moved there: {})",
                crate::git::short(&gap.from),
                crate::git::short(&gap.to),
                t.name,
                names.iter().position(|n| *n == t.name).map_or(1, |i| i + 1),
                names.join(", ")
            ));
            let ask = crate::jobs::find::Ask {
                range: &spec,
                jobs: opts.jobs,
                no_descend: false,
                why: false,
                no_why: false,
                replay: false,
            };
            let (run, why) = crate::jobs::find::find(ws, (*t).clone(), &ask, Instant::now())?;
            out.searches += 1;
            let (b, r) = run.counts();
            out.builds += b;
            out.runs += r;
            let (from, to) = (gap.from.to_string(), gap.to.to_string());
            match &run.outcome {
                Verdict::Culprits(cs) => {
                    for c in cs {
                        let at = &run.commits[c.pos];
                        let fns = why
                            .iter()
                            .find(|(p, _)| *p == c.pos)
                            .and_then(|(_, w)| w.as_ref().ok())
                            .map(|w| {
                                w.changes
                                    .iter()
                                    .filter(|ch| ch.pct_of_total.abs() >= 0.01)
                                    .take(3)
                                    .map(|ch| format!("{} {:+.2} %", ch.function, ch.pct_of_total))
                                    .collect()
                            })
                            .unwrap_or_default();
                        let step = TestStep {
                            test: t.name.clone(),
                            parent: run.commits[c.parent].id.to_string(),
                            before: c.before,
                            after: c.after,
                            rel_change: c.rel_change,
                            interval: c.interval,
                            p_value: c.p_value,
                            deterministic: run.deterministic,
                            runs: (c.n_before, c.n_after),
                            unit: t.unit(),
                            kind: crate::report::find::judge(t.direction, c.rel_change).into(),
                            why: fns,
                            posted: false,
                            // Unbuildable commits between: any of them may be the culprit.
                            candidates: if c.candidates.len() > 1 {
                                c.candidates
                                    .iter()
                                    .map(|&p| run.commits[p].id.to_string())
                                    .collect()
                            } else {
                                Vec::new()
                            },
                            reruns: c.reruns,
                            rerun_windows: c.rerun_windows,
                        };
                        f.confirmed(&at.id.to_string(), &at.subject, step, now());
                        f.mark_searched(&t.name, &from, &to, Some(&at.id.to_string()));
                        let md = crate::publish::files::issue_markdown(
                            ws,
                            &run,
                            &why,
                            &opts.invocation,
                        )?;
                        reports
                            .entry(at.id.to_string())
                            .or_default()
                            .insert(t.name.clone(), md);
                    }
                }
                Verdict::NoChange { .. } => {
                    f.unconfirmed(
                        &to,
                        &gap.subject,
                        &t.name,
                        "the change point did not show when its gap's ends were measured side by side (no change)",
                        now(),
                    );
                    f.mark_searched(&t.name, &from, &to, None);
                }
                Verdict::Inconclusive { reason, .. } => {
                    f.unconfirmed(&to, &gap.subject, &t.name, reason, now());
                    f.mark_searched(&t.name, &from, &to, None);
                }
            }
            keep(&f)?;
        }
    }

    // 4. A later step that returns a level fixes the finding that left it.
    fixes(&mut f, &tests, &order);
    keep(&f)?;

    // 5. Posting.
    if let Some((owner, name)) = &repo {
        let target = format!("{owner}/{name}");
        post_all(ws, &mut f, &file, &target, opts, &reports, &mut out)?;
    }
    out.changed = f
        .findings
        .iter()
        .filter(|x| before.get(&x.commit) != Some(*x))
        .map(|x| x.commit.clone())
        .collect();
    out.findings = f;
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

/// Whether `test`'s change point between `from` and `to` was searched already: the same gap,
/// a gap around it (the search measured commits inside, so the step's gap narrowed), or the
/// commit a search named.
fn settled(f: &Findings, test: &str, from: &str, to: &str, pos: &BTreeMap<String, usize>) -> bool {
    let at = |c: &str| pos.get(c).copied();
    f.searched.iter().filter(|s| s.test == test).any(|s| {
        s.culprit.as_deref() == Some(to)
            || (s.from == from && s.to == to)
            || matches!(
                (at(&s.from), at(from), at(to), at(&s.to)),
                (Some(a), Some(b), Some(c), Some(d)) if a <= b && c <= d
            )
    })
}

/// Findings `a` (earlier) and `b` (later) that share a test whose step at `b` goes back to the
/// level before `a` (opposite sign, within the test's threshold of `a`'s old level): `a` is
/// fixed by `b`, and `b`'s step of that test is said there, not as a finding of its own.
fn fixes(f: &mut Findings, tests: &[Test], order: &BTreeMap<String, BTreeMap<String, usize>>) {
    let mut pairs: Vec<(String, String, String)> = Vec::new();
    for a in &f.findings {
        if !matches!(a.state, State::New | State::Posted) {
            continue;
        }
        for sa in &a.tests {
            let Some(t) = tests.iter().find(|t| t.name == sa.test) else {
                continue;
            };
            let Some(pos) = order.get(&t.name) else {
                continue;
            };
            let Some(&pa) = pos.get(&a.commit) else {
                continue;
            };
            for b in f.findings.iter().filter(|b| b.commit != a.commit) {
                let Some(sb) = b.tests.iter().find(|s| s.test == sa.test) else {
                    continue;
                };
                let later = pos.get(&b.commit).is_some_and(|&pb| pb > pa);
                let back = sb.rel_change * sa.rel_change < 0.0
                    && !t.threshold.reached(sa.before, sb.after);
                if later && back {
                    pairs.push((a.commit.clone(), b.commit.clone(), sa.test.clone()));
                }
            }
        }
    }
    for (a, b, test) in pairs {
        f.fixed(&a, &b, now());
        f.drop_test(&b, &test);
    }
}

/// `OWNER/REPO`, or a usage error naming what is wrong.
fn parse_repo(s: &str) -> anyhow::Result<(String, String)> {
    // The same rules as an issue target's, without the number.
    let t = crate::publish::attach::Target::parse(&format!("{s}#1")).map_err(|_| {
        crate::error::UsageError::err(format!(
            "--attach {s}: write OWNER/REPO (letters, digits, `-`, `_` and `.`), e.g. curl/curl"
        ))
    })?;
    Ok((t.owner, t.repo))
}

/// The issue's title: `perf: h2-req-mem +12.6 % at eb73af253c tool: fix memory…`.
pub fn title(x: &findings::Finding) -> String {
    let mut steps: Vec<&TestStep> = x.tests.iter().collect();
    steps.sort_by(|a, b| b.rel_change.abs().total_cmp(&a.rel_change.abs()));
    let lead = steps.first().map_or_else(String::new, |s| {
        format!("{} {:+.1} %", s.test, s.rel_change * 100.0)
    });
    let more = match steps.len() {
        0 | 1 => String::new(),
        2 => " (and 1 more test)".to_string(),
        n => format!(" (and {} more tests)", n - 1),
    };
    let mut subject: String = x.subject.chars().take(60).collect();
    if subject.len() < x.subject.len() {
        subject.push('…');
    }
    format!("perf: {lead}{more} at {} {subject}", at_commits(x))
}

/// "eb73af253c", or "1a2b3c4d5e or eb73af253c" when commits between the step's ends cannot be
/// built and any of them may be the culprit (the most a title lists: 3).
pub fn at_commits(x: &findings::Finding) -> String {
    let short = |c: &str| c.get(..10).unwrap_or(c).to_string();
    let Some(cands) = x.tests.iter().map(|t| &t.candidates).find(|c| c.len() > 1) else {
        return short(&x.commit);
    };
    let names: Vec<String> = cands.iter().map(|c| short(c)).collect();
    match names.as_slice() {
        [a, b] => format!("{a} or {b}"),
        [a, b, c] => format!("{a}, {b} or {c}"),
        [first, .., last] => format!("one of {} commits, {first} to {last},", names.len()),
        _ => short(&x.commit),
    }
}

/// Carry out what posting still has to do, saving after each step: the marker is looked for
/// before an issue is opened (an issue of an earlier run that crashed before saving counts),
/// and a failure leaves the finding as it was, for the next run.
fn post_all(
    ws: &Workspace,
    f: &mut Findings,
    file: &std::path::Path,
    repo: &str,
    opts: &Options<'_>,
    reports: &BTreeMap<String, BTreeMap<String, String>>,
    out: &mut Outcome,
) -> anyhow::Result<()> {
    use std::ffi::OsStr;
    let tmp = ws.cache.tmp();
    std::fs::create_dir_all(&tmp)?;
    for p in f.pending() {
        let commit = match &p {
            Post::Create { commit } | Post::Join { commit, .. } | Post::Fixed { commit, .. } => {
                commit.clone()
            }
        };
        let Some(x) = f.get(&commit).cloned() else {
            continue;
        };
        let title = title(&x);
        let body = match &p {
            Post::Create { .. } => crate::report::triage::issue_body(
                &x,
                reports.get(&commit).unwrap_or(&BTreeMap::new()),
                &opts.invocation,
            ),
            Post::Join { tests, .. } => crate::report::triage::join_comment(&x, tests),
            Post::Fixed { by, .. } => {
                let subject = gix::ObjectId::from_hex(by.as_bytes())
                    .ok()
                    .and_then(|id| ws.repo.info(id).ok())
                    .map(|i| i.subject)
                    .unwrap_or_default();
                crate::report::triage::fixed_comment(&x, by, &subject)
            }
        };
        let what = match p {
            Post::Create { .. } => "created",
            Post::Join { .. } => "commented",
            Post::Fixed { .. } => "fixed",
        };
        if opts.dry_run {
            out.posted.push(Posted {
                commit,
                what,
                url: x.url.clone(),
                title,
                dry_run: true,
            });
            continue;
        }
        // Every post carries its marker, by which a post that went through unsaved is found.
        let body = match &p {
            Post::Create { .. } => body,
            _ => format!("{body}\n<sub>{}</sub>\n", findings::comment_marker(&p)),
        };
        let path = tmp.join(format!("triage-{commit}.md"));
        std::fs::write(&path, &body)?;
        let result = (|| -> anyhow::Result<(&'static str, Option<String>)> {
            match &p {
                Post::Create { .. } => {
                    if let Some((url, n)) = find_marked(repo, &commit)? {
                        f.posted(&commit, &url, n, now());
                        return Ok(("found", Some(url)));
                    }
                    let stdout = crate::publish::attach::gh(
                        &[
                            OsStr::new("issue"),
                            OsStr::new("create"),
                            OsStr::new("--repo"),
                            OsStr::new(repo),
                            OsStr::new("--title"),
                            OsStr::new(&title),
                            OsStr::new("--body-file"),
                            path.as_os_str(),
                            OsStr::new("--label"),
                            OsStr::new(&opts.label),
                        ],
                        "`gh issue create`",
                    )?;
                    // The issue's URL and number from gh's answer, else from the issue that
                    // carries the marker; an issue that cannot be identified stays pending.
                    let (url, n) = match crate::publish::attach::issue_url(&stdout) {
                        Some((url, n)) => (url, Some(n)),
                        None => find_marked(repo, &commit)?.ok_or_else(|| {
                            anyhow::anyhow!(
                                "`gh issue create` printed no issue URL ({}) and no issue carries \
                                 the finding's marker yet; the issue stays pending (the next run \
                                 looks for its marker before creating one)",
                                stdout.trim()
                            )
                        })?,
                    };
                    f.posted(&commit, &url, n, now());
                    Ok(("created", Some(url)))
                }
                Post::Join { .. } | Post::Fixed { .. } => {
                    let n = match x.issue {
                        Some(n) => n,
                        // A posted finding whose number was never known: its issue by marker.
                        None => match find_marked(repo, &commit)? {
                            Some((url, Some(n))) => {
                                f.set_issue(&commit, &url, n);
                                n
                            }
                            // Fixed before any issue of it was opened: nothing to comment on.
                            None if matches!(p, Post::Fixed { .. }) => {
                                mark(f, &p);
                                return Ok(("fixed before it was posted, no comment:", None));
                            }
                            _ => anyhow::bail!(
                                "the finding's issue cannot be identified (no number known, and \
                                 no issue carries its marker): the comment stays pending"
                            ),
                        },
                    };
                    let n = n.to_string();
                    // A comment that went through unanswered (a timeout, a kill before the
                    // save) carries its marker: found, not posted again.
                    let marker = findings::comment_marker(&p);
                    match commented(repo, &n, &marker) {
                        Ok(true) => {
                            mark(f, &p);
                            return Ok(("found", None));
                        }
                        Ok(false) => {}
                        // A gh that cannot list the comments (an older one): posted unchecked,
                        // as before markers, and said.
                        Err(e) => ws.warn(&format!(
                            "cannot look for an earlier copy of the comment on issue {n} ({e:#}); \
                             posting it"
                        )),
                    }
                    let stdout = crate::publish::attach::gh(
                        &[
                            OsStr::new("issue"),
                            OsStr::new("comment"),
                            OsStr::new(&n),
                            OsStr::new("--repo"),
                            OsStr::new(repo),
                            OsStr::new("--body-file"),
                            path.as_os_str(),
                        ],
                        "`gh issue comment`",
                    )?;
                    mark(f, &p);
                    Ok((what, crate::publish::attach::url_in(&stdout)))
                }
            }
        })();
        let _ = std::fs::remove_file(&path);
        match result {
            Ok((what, url)) => {
                findings::save(file, f)?;
                ws.note(&format!(
                    "perfbisect: triage: {what} {}",
                    url.as_deref().unwrap_or(&title)
                ));
                out.posted.push(Posted {
                    commit,
                    what,
                    url,
                    title,
                    dry_run: false,
                });
            }
            Err(e) => {
                let msg = format!("{title}: {e:#}; left for the next run");
                ws.warn(&msg);
                out.failures.push(msg);
            }
        }
    }
    Ok(())
}

/// A comment of `p` went to its issue.
fn mark(f: &mut Findings, p: &Post) {
    match p {
        Post::Join { commit, tests } => f.joined(commit, tests, now()),
        Post::Fixed { commit, .. } => f.fix_posted(commit, now()),
        Post::Create { .. } => {}
    }
}

/// The URL and number of an issue of `repo` whose body carries `commit`'s marker, if there
/// is one.
fn find_marked(repo: &str, commit: &str) -> anyhow::Result<Option<(String, Option<u64>)>> {
    use std::ffi::OsStr;
    let marker = findings::marker(commit);
    let stdout = crate::publish::attach::gh(
        &[
            OsStr::new("issue"),
            OsStr::new("list"),
            OsStr::new("--repo"),
            OsStr::new(repo),
            OsStr::new("--state"),
            OsStr::new("all"),
            OsStr::new("--search"),
            OsStr::new(&marker),
            OsStr::new("--json"),
            OsStr::new("number,url,body"),
        ],
        "`gh issue list`",
    )?;
    let list: serde_json::Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        anyhow::anyhow!(
            "`gh issue list` printed no JSON list ({e}): {}",
            stdout.trim()
        )
    })?;
    Ok(list.as_array().and_then(|a| {
        a.iter()
            .find(|i| i["body"].as_str().is_some_and(|b| b.contains(&marker)))
            .and_then(|i| Some((i["url"].as_str()?.to_string(), i["number"].as_u64())))
    }))
}

/// Whether issue `number` of `repo` has a comment carrying `marker`.
fn commented(repo: &str, number: &str, marker: &str) -> anyhow::Result<bool> {
    use std::ffi::OsStr;
    let stdout = crate::publish::attach::gh(
        &[
            OsStr::new("issue"),
            OsStr::new("view"),
            OsStr::new(number),
            OsStr::new("--repo"),
            OsStr::new(repo),
            OsStr::new("--json"),
            OsStr::new("comments"),
        ],
        "`gh issue view`",
    )?;
    let v: serde_json::Value = serde_json::from_str(stdout.trim())
        .map_err(|e| anyhow::anyhow!("`gh issue view` printed no JSON ({e}): {}", stdout.trim()))?;
    Ok(v["comments"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["body"].as_str().is_some_and(|b| b.contains(marker)))
    }))
}
