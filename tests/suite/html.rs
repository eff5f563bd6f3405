//! `report --format html`: the static site, opened in a real browser.
//!
//! Each page is loaded from disk by headless Chromium at 1280 and 400 px wide. A copy of the
//! page with a small script added (the site itself has none) checks that every image loaded
//! (`complete` and a natural width) and that no element reaches past the viewport, and hands
//! its verdict to the page around it, which writes it into the DOM that `--dump-dom` prints.
//! The page is shown in an `<iframe>` of the width under test because headless Chromium lays
//! out a window no narrower than 500 px whatever `--window-size` says. A screenshot of each
//! page and width is kept under the target directory for a person to look at.
//!
//! Without a Chromium on PATH the browser part is skipped with a message, unless
//! `PERFBISECT_REQUIRE_BROWSER` is set (`.ci/run` sets it after installing Debian's
//! `chromium`), where it fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{specs, Fixture};

const CONFIG: &str = r#"
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "bytes/sec"
direction = "higher"
threshold = "2%"
repeats = 3
stake = 5400000000
description = "Download speed of a long transfer with a description that is long enough to wrap on a phone"

[tests.size]
command = "./app"
metric = { regex = "^checksum: ([0-9]+)" }
unit = "bytes"
deterministic = true
threshold = "0.1%"

[tests.never-measured]
command = "./app"
metric = "wall"
"#;

const CHECK: &str = r#"<script>
(function () {
  function verdict() {
    var bad = [];
    var imgs = document.images;
    for (var i = 0; i < imgs.length; i++) {
      var im = imgs[i];
      if (!(im.complete && im.naturalWidth > 0)) bad.push('image not loaded: ' + (im.currentSrc || im.src));
    }
    var W = document.documentElement.clientWidth;
    var all = document.body.getElementsByTagName('*');
    for (var j = 0; j < all.length; j++) {
      var e = all[j];
      if (getComputedStyle(e).display === 'none') continue;
      var r = e.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (r.right > W + 0.5 || r.left < -0.5) {
        bad.push('overflows the ' + W + ' px viewport: <' + e.tagName.toLowerCase() +
          (e.className ? ' class="' + e.className + '"' : '') + '> from ' + Math.round(r.left) +
          ' to ' + Math.round(r.right) + ': ' + (e.textContent || '').slice(0, 60));
      }
    }
    if (document.documentElement.scrollWidth > W) bad.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' px');
    var d = document.createElement('pre');
    d.id = 'pb-verdict';
    d.textContent = bad.length ? 'FAIL ' + bad.join(' | ') : 'OK ' + imgs.length + ' images';
    document.body.appendChild(d);
    if (window.parent !== window) window.parent.postMessage(d.textContent, '*');
  }
  if (document.readyState === 'complete') verdict(); else window.addEventListener('load', verdict);
})();
</script>"#;

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The page around `page` that shows it in a `width` px wide frame and writes the verdict the
/// frame posts into its own DOM.
fn frame(width: u32, page: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"></head><body style=\"margin:0\">\
         <iframe src=\"{page}\" style=\"width:{width}px;height:1600px;border:0;display:block\"></iframe>\
         <script>window.addEventListener('message', function (e) {{ var d = document.createElement('pre'); \
         d.id = 'pb-verdict'; d.textContent = e.data; document.body.appendChild(d); }});</script>\
         </body></html>"
    )
}

/// Run the browser with `args` on `url`; its stdout. Killed after two minutes.
fn browse(browser: &Path, width: u32, args: &[&str], url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={width},1600"))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not finish in 2 minutes on {url}", browser.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// A fixture of 40 commits: the value rises 4 % at commit 30, the deterministic size stays,
/// commit 7 does not build.
fn site() -> (Fixture, PathBuf) {
    let f = Fixture::new(
        &specs(40, |i, c| {
            c.metric = 5.4e9 * if i >= 30 { 1.04 } else { 1.0 };
            c.subject =
                format!("Commit {i}: a subject long enough to need wrapping on a narrow screen");
            c.broken = i == 7;
        }),
        CONFIG,
    );
    f.run_json("value,size", &f.range(), &[]);
    let dir = f.dir.path().join("site");
    let out = f
        .cmd()
        .args(["report", "all", &f.range(), "--format", "html", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (f, dir)
}

#[test]
fn the_site_reads_in_a_browser_on_a_desktop_and_on_a_phone() {
    let (f, dir) = site();
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
    // Every configured test is on the index; only measured ones link to a page.
    assert!(index.contains("href=\"value.html\""), "{index}");
    assert!(index.contains(">never-measured<"), "{index}");
    assert!(!index.contains("href=\"never-measured.html\""));
    assert!(index.contains("<svg class=\"spark\""));
    // The test is coloured and worded by its decided step (download speed: higher is better,
    // and it rose 4 %).
    assert!(
        index.contains("<b class=\"better\">1 improvement decided</b>"),
        "{index}"
    );
    let page = std::fs::read_to_string(dir.join("value.html")).unwrap();
    for want in [
        "Download speed of a long transfer",
        "P50",
        "current results are",
        "Mann-Kendall",
        "Sen's slope",
        // The range's 39 commits and its old end (a site of a RANGE starts there).
        "Most recent 40 commits",
        "Full range",
        "cc -O1 -o app app.c -lm",
        "build failed",
    ] {
        assert!(
            page.contains(want),
            "{want} missing from value.html: {page}"
        );
    }
    // The change point links to its commit's row.
    let cp = &f.ids[29][..10];
    assert!(page.contains(&format!("href=\"#c-{cp}\"")), "{page}");
    assert!(
        page.contains(&format!("<tr id=\"c-{cp}\" class=\"cp\"")),
        "{page}"
    );
    // Static: no script, nothing fetched from a network.
    for (name, html) in [("index", &index), ("value", &page)] {
        assert!(!html.contains("<script"), "{name} has a script");
        assert!(
            !html.contains("src=\"http") && !html.contains("href=\"http"),
            "{name}"
        );
    }
    for img in ["value-recent", "value-distribution", "value-full"] {
        for suffix in ["", "-narrow"] {
            let svg = std::fs::read_to_string(dir.join(format!("img/{img}{suffix}.svg"))).unwrap();
            assert!(svg.starts_with("<svg"), "{img}{suffix}");
        }
    }
    // Written again into the same folder: allowed, and the same bytes.
    let again = f.dir.path().join("site2");
    let out = f
        .cmd()
        .args(["report", "all", &f.range(), "--format", "html", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = f
        .cmd()
        .args(["report", "all", &f.range(), "--format", "html", "--out"])
        .arg(&again)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        std::fs::read(dir.join("value.html")).unwrap(),
        std::fs::read(again.join("value.html")).unwrap()
    );
    assert_eq!(
        std::fs::read(dir.join("img/value-recent.svg")).unwrap(),
        std::fs::read(again.join("img/value-recent.svg")).unwrap()
    );

    let Some(browser) = chromium() else {
        if std::env::var_os("PERFBISECT_REQUIRE_BROWSER").is_some() {
            panic!("PERFBISECT_REQUIRE_BROWSER is set but no chromium is on PATH");
        }
        eprintln!("no chromium on PATH: the pages were not checked in a browser (apt-get install chromium)");
        return;
    };
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-check");
    std::fs::create_dir_all(&shots).unwrap();
    let mut failures = Vec::new();
    for name in ["index", "value", "size"] {
        let html = std::fs::read_to_string(dir.join(format!("{name}.html"))).unwrap();
        let checked = format!(".check-{name}.html");
        std::fs::write(
            dir.join(&checked),
            html.replace("</body>", &format!("{CHECK}</body>")),
        )
        .unwrap();
        for width in [1280, 400] {
            let framed = dir.join(format!(".frame-{name}-{width}.html"));
            std::fs::write(&framed, frame(width, &checked)).unwrap();
            let dom = browse(
                &browser,
                1300,
                &["--dump-dom"],
                &format!("file://{}", framed.display()),
            );
            let verdict = dom
                .split("<pre id=\"pb-verdict\">")
                .nth(1)
                .and_then(|s| s.split("</pre>").next())
                .unwrap_or("no verdict: the check did not run")
                .to_string();
            if !verdict.starts_with("OK ") {
                failures.push(format!("{name}.html at {width} px: {verdict}"));
            } else if name != "index" {
                assert_eq!(verdict, "OK 3 images", "{name} at {width} px");
            }
            // The picture: the page itself at 1280, the framed 400 px page on a phone.
            let shot = shots.join(format!("{name}-{width}.png"));
            let _ = std::fs::remove_file(&shot);
            let shown = if width == 1280 {
                dir.join(format!("{name}.html"))
            } else {
                let f = dir.join(format!(".phone-{name}.html"));
                std::fs::write(&f, frame(width, &format!("{name}.html"))).unwrap();
                f
            };
            browse(
                &browser,
                width.max(500),
                &[&format!("--screenshot={}", shot.display())],
                &format!("file://{}", shown.display()),
            );
            let bytes = std::fs::read(&shot)
                .unwrap_or_else(|e| panic!("no screenshot {}: {e}", shot.display()));
            let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
            let info = decoder.read_info().unwrap().info().clone();
            assert!(info.width >= width, "{}", shot.display());
            eprintln!("screenshot: {}", shot.display());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
