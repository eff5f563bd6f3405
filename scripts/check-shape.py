#!/usr/bin/env python3
"""The shape of the source tree: import cycles between files, the size of commands/, the
largest files, the longest functions.

Every path a file names (`use crate::a::b`, `super::x::Y`, `self::m`, a child module `m::f()`
or a name a `use` brought in, `alias::f()`) is resolved to the file of the longest module
prefix it names, without following re-exports: `use super::Thing` in a child of `mod.rs`
is an edge to `mod.rs` even when `mod.rs` only re-exports `Thing`. Code under
`#[cfg(test)]` (test modules and test-only files) is left out of the graph and of the line
counts. `--strict` also counts each `mod child;` declaration as an edge from the parent to
the child, so a child that names anything of its parent's file is a cycle.

Lines of code are lines that hold something other than whitespace and comments. A function's
length counts every line from its `fn` to its closing brace (tests left out).

Usage: scripts/check-shape.py [--strict] [--with-comments] [--with-tests] [--edges] [--src DIR]
       [--max-file N] [--max-commands N] [--max-fn N]
Exit code 1 when a cycle exists or a limit is passed.
"""

import argparse
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments_and_strings(text):
    """Blank out comments, string and char literals, keeping newlines so lines still count."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
            continue
        m = re.match(r'b?r(#*)"', text[i:i + 260]) if c in "rb" and (i == 0 or not re.match(r"[A-Za-z0-9_]", text[i - 1])) else None
        if m:
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append('""' + "".join("\n" for ch in text[i:j] if ch == "\n"))
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append('""' + "".join("\n" for ch in text[i:j] if ch == "\n"))
            i = j
            continue
        if c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'\n])'", text[i:i + 12])
            if m:
                out.append("' '")
                i += m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def item_end(code, start):
    """End of the item starting at `start`: its `;` or its balanced `{...}`."""
    depth, j, n = 0, start, len(code)
    while j < n:
        ch = code[j]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == ";" and depth == 0:
            return j + 1
        elif ch == "{":
            d, k = 1, j + 1
            while k < n and d:
                if code[k] == "{":
                    d += 1
                elif code[k] == "}":
                    d -= 1
                k += 1
            return k
        j += 1
    return n


def remove_cfg_test(code):
    """Blank out items under #[cfg(test)]; return (code, names of test-only child modules)."""
    test_children = set()
    pat = re.compile(r"#\[cfg\(test\)\]")
    while True:
        m = pat.search(code)
        if not m:
            return code, test_children
        start = m.start()
        rest = m.end()
        # skip further attributes
        while True:
            a = re.match(r"\s*#\[[^\]]*\]", code[rest:])
            if not a:
                break
            rest += a.end()
        mm = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", code[rest:])
        if mm:
            test_children.add(mm.group(1))
        end = item_end(code, rest)
        blank = "".join("\n" if ch == "\n" else " " for ch in code[start:end])
        code = code[:start] + blank + code[end:]


def inline_super_to_self(code):
    """Inside an inline `mod name { ... }` (a test module), `super::` is the file's own module."""
    out, pos = [], 0
    for m in re.finditer(r"\bmod\s+" + IDENT + r"\s*\{", code):
        if m.start() < pos:
            continue
        end = item_end(code, m.start())
        out.append(code[pos:m.start()])
        out.append(re.sub(r"\bsuper::", "self::", code[m.start():end]))
        pos = end
    out.append(code[pos:])
    return "".join(out)


def parse_use_tree(s):
    """Expand a use tree (`a::{b, c::{d as e, *}}`) to (path list, alias) pairs."""
    s = re.sub(r"\s+as\s+", "@", s)
    s = re.sub(r"\s+", "", s)
    results = []

    def split_top(t):
        parts, depth, cur = [], 0, ""
        for ch in t:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        return parts

    def walk(prefix, t):
        if not t:
            return
        k = t.find("{")
        if k >= 0 and t.endswith("}"):
            head = t[:k].rstrip(":")
            base = prefix + ([p for p in head.split("::") if p] if head else [])
            for part in split_top(t[k + 1:-1]):
                walk(base, part)
            return
        alias = None
        if "@" in t:
            t, alias = t.split("@", 1)
        segs = t.split("::")
        results.append((prefix + segs, alias))

    walk([], s)
    return results


class Module:
    def __init__(self, path, file):
        self.path = path  # tuple of segments after crate
        self.file = file


KEEP_COMMENTS = False
KEEP_TESTS = False


def discover(src):
    """Map module paths (tuples) to files, following `mod x;` declarations from lib.rs."""
    modules = {}
    test_files = set()
    texts = {}

    def load(file):
        with open(file, encoding="utf-8") as f:
            raw = f.read()
        if KEEP_COMMENTS:
            # Doc links (`[`super::x`]`) count too: comment markers are hidden from the stripper.
            hidden = raw.replace("//", "\x01\x01").replace("/*", "\x02\x02")
            code = strip_comments_and_strings(hidden).replace("\x01\x01", "  ").replace("\x02\x02", "  ")
        else:
            code = strip_comments_and_strings(raw)
        code_nt, test_children = remove_cfg_test(code)
        if KEEP_TESTS:
            code_nt, test_children = inline_super_to_self(code), set()
        texts[file] = (raw, code, code_nt)
        return code, code_nt, test_children

    def visit(path, file, is_test):
        modules[path] = file
        if is_test:
            test_files.add(file)
        code, code_nt, test_children = load(file)
        d = os.path.dirname(file)
        base = os.path.basename(file)
        child_dir = d if base in ("lib.rs", "mod.rs", "main.rs") else os.path.join(d, base[:-3])
        for m in re.finditer(r"(?:^|[;}\s])(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", code):
            name = m.group(1)
            cands = [os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name, "mod.rs")]
            for cand in cands:
                if os.path.exists(cand):
                    visit(path + (name,), cand, is_test or name in test_children)
                    break
        # inline non-test modules live in the same file
        for m in re.finditer(r"(?:^|[;}\s])(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*\{", code_nt):
            modules.setdefault(path + (m.group(1),), file)

    visit((), os.path.join(src, "lib.rs"), False)
    # `#[macro_export]` macros live at the crate root but belong to the file defining them
    for file, (_raw, code, _nt) in list(texts.items()):
        for m in re.finditer(r"#\[macro_export\]\s*macro_rules!\s*(" + IDENT + r")", code):
            modules.setdefault((m.group(1),), file)
    return modules, test_files, texts


def edges_of(path, file, modules, code):
    """Files this file's (non-test) code names."""
    children = {p[-1] for p in modules if len(p) == len(path) + 1 and p[:-1] == path}
    is_dir_mod = os.path.basename(file) in ("lib.rs", "mod.rs")
    here = path  # module path of the file itself

    def absolute(segs):
        if not segs:
            return None
        cur = list(here)
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("self", "super"):
            i = 0
            while i < len(segs) and segs[i] in ("self", "super"):
                if segs[i] == "super":
                    cur = cur[:-1]
                i += 1
            return cur + segs[i:]
        if segs[0] in children:
            return list(here) + segs
        return None

    def resolve(abs_segs):
        best = None
        for k in range(len(abs_segs), -1, -1):
            key = tuple(abs_segs[:k])
            if key in modules:
                best = modules[key]
                break
        return best

    targets = set()
    aliases = {}
    # use declarations
    for m in re.finditer(r"\buse\s+([^;]*);", code):
        for segs, alias in parse_use_tree(m.group(1)):
            segs = [s for s in segs if s]
            a = absolute(segs)
            if a is None:
                continue
            name = alias or segs[-1]
            if a and a[-1] == "*":
                a = a[:-1]
            t = resolve(a)
            if t:
                targets.add(t)
            if tuple(a) in modules and name not in ("self", "*"):
                aliases[name] = a
            if name == "self" and tuple(a[:-1]) in modules:
                aliases[a[-2] if len(a) >= 2 else ""] = a[:-1]
    # paths in code
    for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:" + IDENT + r")(?:\s*::\s*" + IDENT + r")+)", code):
        segs = [s.strip() for s in m.group(1).split("::")]
        if segs[0] in aliases and segs[0] not in ("crate", "self", "super"):
            a = aliases[segs[0]] + segs[1:]
        else:
            a = absolute(segs)
        if a is None:
            continue
        t = resolve(a)
        if t:
            targets.add(t)
    targets.discard(file)
    return targets


def tarjan(graph):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def long_functions(code_nt, limit):
    """(lines, name) of each function in `code_nt` (comments, strings and tests blanked out)
    whose body spans more than `limit` lines."""
    out = []
    for m in re.finditer(r"\bfn\s+(" + IDENT + r")", code_nt):
        brace, semi = code_nt.find("{", m.end()), code_nt.find(";", m.end())
        if brace < 0 or 0 <= semi < brace:
            continue
        depth, k = 0, brace
        while k < len(code_nt):
            if code_nt[k] == "{":
                depth += 1
            elif code_nt[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        n = code_nt.count("\n", m.start(), k) + 1
        if n > limit:
            out.append((n, m.group(1)))
    return out


def loc(code_nt):
    return sum(1 for line in code_nt.splitlines() if line.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"))
    ap.add_argument("--strict", action="store_true", help="count `mod child;` as an edge too")
    ap.add_argument("--with-comments", action="store_true",
                    help="count paths named in comments and doc links too (and comment lines)")
    ap.add_argument("--with-tests", action="store_true", help="count #[cfg(test)] code too")
    ap.add_argument("--max-file", type=int, default=900)
    ap.add_argument("--max-commands", type=int, default=2500)
    ap.add_argument("--max-fn", type=int, default=150, help="longest function, in lines")
    ap.add_argument("--top", type=int, default=8, help="how many of the largest files to list")
    ap.add_argument("--edges", action="store_true", help="print the edges inside each cycle")
    args = ap.parse_args()
    src = os.path.normpath(args.src)
    global KEEP_COMMENTS, KEEP_TESTS
    KEEP_COMMENTS, KEEP_TESTS = args.with_comments, args.with_tests

    modules, test_files, texts = discover(src)
    files = {}
    for p, f in modules.items():
        files.setdefault(f, p if f not in files or len(p) < len(files[f]) else files[f])
    graph = {}
    for f, p in files.items():
        if f in test_files:
            continue
        _raw, _code, code_nt = texts[f]
        targets = {t for t in edges_of(p, f, modules, code_nt) if t not in test_files}
        if args.strict:
            for q, g in modules.items():
                if len(q) == len(p) + 1 and q[:-1] == p and g != f and g not in test_files:
                    targets.add(g)
        graph[f] = targets

    rel = lambda f: os.path.relpath(f, src)
    sccs = [sorted(c) for c in tarjan(graph) if len(c) > 1]
    failed = False
    mode = "strict (mod declarations count)" if args.strict else "use paths"
    print(f"import cycles between files ({mode}): {len(sccs)}")
    for c in sorted(sccs, key=len, reverse=True):
        failed = True
        print(f"  {{{', '.join(rel(f) for f in c)}}}")
        if args.edges:
            s = set(c)
            for f in c:
                for t in sorted(graph[f] & s):
                    print(f"      {rel(f)} -> {rel(t)}")

    sizes = {f: loc(texts[f][2]) for f in files if f not in test_files}
    commands = sum(n for f, n in sizes.items() if rel(f).startswith("commands" + os.sep))
    print(f"commands/ lines of code (without tests): {commands} (limit {args.max_commands})")
    if commands > args.max_commands:
        failed = True
    print(f"largest files, lines of code without tests (limit {args.max_file}):")
    for f, n in sorted(sizes.items(), key=lambda kv: -kv[1])[: args.top]:
        mark = "  over" if n > args.max_file else ""
        print(f"  {n:5} {rel(f)}{mark}")
        if n > args.max_file:
            failed = True
    long = sorted(
        ((n, rel(f), name) for f in sizes for n, name in long_functions(texts[f][2], args.max_fn)),
        reverse=True,
    )
    print(f"functions over {args.max_fn} lines (without tests): {len(long)}")
    for n, f, name in long:
        print(f"  {n:5} {f} {name}  over")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(1)
