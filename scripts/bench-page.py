#!/usr/bin/env python3
"""Run a benchmark and write what it printed into its section of src/guide/benchmarks.md.

The page's figures are never edited by hand: each section sits between
`<!-- begin bench: NAME -->` and `<!-- end bench: NAME -->`, and this script rewrites it with
the command, the date, the machine (kernel, CPU model, cores, load when it started) and the
command's output (as it is with --markdown, its headings made smaller; else as a text block).
The benchmark scripts call it themselves; any other benchmark runs through it as

    scripts/bench-page.py import -- cargo bench --bench import

The command runs with BENCH_PAGE=off in its environment (so that a script which calls this one
does not call it again); its output is shown as it comes. Nothing is written when it fails.
Usage: scripts/bench-page.py NAME [--markdown] [--page FILE] -- COMMAND [ARG...]
"""

import datetime
import os
import platform
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "src", "guide", "benchmarks.md")


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = ""
    try:
        load = f", load average {os.getloadavg()[0]:.1f} when it started"
    except OSError:
        pass
    return f"{platform.system()} {platform.release()} {platform.machine()}, {cpu or 'unknown CPU'}, {os.cpu_count()} cores{load}"


def section(name, command, output, markdown):
    when = datetime.date.today().isoformat()
    head = f"Written by `{shlex.join(command)}` on {when}, on {machine()}.\n\n"
    if markdown:
        # The page's own headings stay above the section's.
        body = re.sub(r"^(#{1,3}) ", lambda m: "#" * (len(m.group(1)) + 2) + " ", output, flags=re.M)
    else:
        body = "```text\n" + output.rstrip("\n") + "\n```\n"
    return head + body.rstrip("\n") + "\n"


def refresh(page_text, name, content):
    begin, end = f"<!-- begin bench: {name} -->", f"<!-- end bench: {name} -->"
    i, j = page_text.find(begin), page_text.find(end)
    if i < 0 or j < i:
        sys.exit(f"bench-page.py: {PAGE} has no section `{name}` ({begin} ... {end})")
    return page_text[: i + len(begin)] + "\n" + content + page_text[j:]


def main():
    args = sys.argv[1:]
    if "--" not in args or not args or args[0].startswith("-"):
        sys.exit(__doc__.strip().splitlines()[-1])
    cut = args.index("--")
    opts, command = args[:cut], args[cut + 1:]
    name, markdown, page = opts[0], "--markdown" in opts, PAGE
    if "--page" in opts:
        page = opts[opts.index("--page") + 1]
    env = dict(os.environ, BENCH_PAGE="off")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True)
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    if proc.wait() != 0:
        sys.exit(f"bench-page.py: `{' '.join(command)}` failed; {page} is left as it was")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    with open(page, "w", encoding="utf-8") as f:
        f.write(refresh(text, name, section(name, command, "".join(lines), markdown)))
    print(f"bench-page.py: wrote section `{name}` of {os.path.relpath(page, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
