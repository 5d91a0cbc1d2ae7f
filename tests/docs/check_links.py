#!/usr/bin/env python3
"""Every relative link in the repository's Markdown resolves (ctest docs.relative-links).

A clone holds only what is tracked, so a link to a file outside the repository (a sibling folder
of the clone, as the contracts once were) or to a file that was moved is a dead end for a reader. For each tracked
*.md file (`git ls-files`; without git, every *.md outside build, cache, report and hidden folders),
every inline link `[text](target)` and reference definition `[id]: target` outside code is
checked:
  - a target with a scheme (https:, mailto:) is not checked;
  - a relative path must name a file or folder that exists (relative to the linking file; a
    leading / is relative to the repository root, as GitHub reads it);
  - `#anchor` (alone, or after a path to a .md file) must name a heading of that file, by
    GitHub's rule: lower case, punctuation but - and _ dropped, spaces to -, a repeated heading
    gets -1, -2, ...

    check_links.py --source DIR [FILE.md...]       (no FILE: every Markdown file of DIR)
    check_links.py --self-test WORK_DIR             (the checker against a tree with known breaks)
    check_links.py --source DIR --hiccup BIN        (the paths `BIN COMMAND --help` names exist)

Prints one line per broken link, `FILE:LINE: link TARGET: why`, and exits 1 when there is one.
"""
import argparse
import os
import re
import subprocess
import sys
import urllib.parse

SKIP_DIRS = {"node_modules", "reports"}
INLINE = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S+)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)


def markdown_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.md"], capture_output=True, check=True).stdout
        files = [f for f in out.decode().split("\0") if f]
        if files:
            return sorted(os.path.join(root, f) for f in files if os.path.isfile(os.path.join(root, f)))
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build") and x not in SKIP_DIRS]
        found += [os.path.join(d, n) for n in names if n.endswith(".md")]
    return sorted(found)


def unfenced(lines):
    """(index, line) of `lines` outside fenced code blocks (``` or ~~~, closed by a fence of the
    same character at least as long)."""
    fence = None
    for i, line in enumerate(lines):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield i, line


def prose_lines(text):
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    for i, line in unfenced(text.splitlines()):
        yield i + 1, re.sub(r"(`+)(?:(?!\1).)*?\1", lambda c: " " * len(c.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading text."""
    text = re.sub(r"<[^>]+>", "", heading)                         # inline HTML
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)          # links keep their text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)                            # punctuation (Unicode letters stay)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        seen, out = {}, set()
        lines = text.splitlines()
        for i, line in unfenced(lines):
            out.update(a for a in HTML_ANCHOR.findall(line))
            h = HEADING.match(line)
            title = h.group(2) if h else None
            if title is None and i + 1 < len(lines) and SETEXT.match(lines[i + 1]) and line.strip() and \
                    not line.lstrip().startswith(("-", "*", "|", ">")):
                title = line.strip()
            if title is None:
                continue
            base = slug(title)
            k = seen.get(base, 0)
            seen[base] = k + 1
            out.add(base if k == 0 else f"{base}-{k}")
        cache[path] = out
    return cache[path]


def check_target(root, md, target):
    """Why `target` (a link in file `md`) is broken, or None."""
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
        return None  # a URL with a scheme (https:, mailto:) or an empty link
    path, _, anchor = target.partition("#")
    path = urllib.parse.unquote(path.split("?")[0])
    if path:
        base = root if path.startswith("/") else os.path.dirname(md)
        full = os.path.normpath(os.path.join(base, path.lstrip("/")))
        if not os.path.realpath(full).startswith(os.path.realpath(root) + os.sep) and \
                os.path.realpath(full) != os.path.realpath(root):
            return f"points outside the repository ({os.path.relpath(full, root)}), which a clone does not have"
        if not os.path.exists(full):
            return f"no such file or folder: {os.path.relpath(full, root)}"
    else:
        full = md
    if anchor:
        if not full.endswith(".md") or os.path.isdir(full):
            return None  # anchors into other files (source lines, HTML) are not checked
        anchor = urllib.parse.unquote(anchor).lower()
        if anchor not in anchors(full):
            near = sorted(a for a in anchors(full) if a[:4] == anchor[:4])[:5]
            return (f"no heading #{anchor} in {os.path.relpath(full, root)}" +
                    (f" (similar: {', '.join('#' + a for a in near)})" if near else ""))
    return None


def check(root, files):
    """Prints the broken links of `files`; returns how many."""
    broken = links = 0
    for md in files:
        with open(md, encoding="utf-8") as f:
            text = f.read()
        for n, line in prose_lines(text):
            targets = [m.group(3) for m in INLINE.finditer(line)]
            r = REFDEF.match(line)
            if r:
                targets.append(r.group(2))
            for t in targets:
                links += 1
                why = check_target(root, md, t)
                if why:
                    broken += 1
                    print(f"{os.path.relpath(md, root)}:{n}: link {t}: {why}")
    print(f"{links} link(s) in {len(files)} Markdown file(s), {broken} broken")
    return broken


SELF_TEST = {
    "README.md": """# Tool

See [the design](docs/DESIGN.md), [its invariants](docs/DESIGN.md#the-invariants-pairing-and-more),
[a folder](docs/), [a heading here](#tool), [the web](https://example.com/x.md#nowhere), and
`[not a link](code/span.md)`.

```
[not a link either](fenced.md)
```

[ref]: docs/DESIGN.md#repeated-1
""",
    "docs/DESIGN.md": """# Design

## The invariants: `pairing` and more

## Repeated

## Repeated

Back to [the readme](../README.md#tool) and [the parent](../../outside.md).
Broken: [moved](POLICY.md), [no heading](../README.md#usage), [here](#designs),
[ref]: ../README.md#tool
""",
}
SELF_TEST_WANT = [
    "docs/DESIGN.md:9: link ../../outside.md: points outside the repository (../outside.md), which a clone does not have",
    "docs/DESIGN.md:10: link POLICY.md: no such file or folder: docs/POLICY.md",
    "docs/DESIGN.md:10: link ../README.md#usage: no heading #usage in README.md",
    "docs/DESIGN.md:10: link #designs: no heading #designs in docs/DESIGN.md (similar: #design)",
]


def self_test(work):
    """The checker finds exactly the broken links of a small tree, and passes it once they are fixed."""
    import contextlib, io, shutil
    root = os.path.join(os.path.abspath(work), "repo")
    shutil.rmtree(root, ignore_errors=True)
    for name, text in SELF_TEST.items():
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    files = [os.path.join(root, n) for n in sorted(SELF_TEST)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        broken = check(root, files)
    got = out.getvalue().splitlines()
    want = SELF_TEST_WANT + [f"12 link(s) in 2 Markdown file(s), {len(SELF_TEST_WANT)} broken"]
    if got != want:
        print("self-test: expected\n  " + "\n  ".join(want) + "\nfound\n  " + "\n  ".join(got))
        return 1
    design = os.path.join(root, "docs/DESIGN.md")
    with open(design) as f:
        text = f.read()
    with open(design, "w") as f:
        f.write(text.replace("Broken: [moved](POLICY.md), [no heading](../README.md#usage), [here](#designs),",
                             "Fixed: [moved](../README.md), [heading](../README.md#tool), [here](#design),")
                    .replace(" and [the parent](../../outside.md)", ""))
    with contextlib.redirect_stdout(io.StringIO()):
        broken = check(root, files)
    if broken:
        print(f"self-test: {broken} broken link(s) left after the fix")
        return 1
    print("self-test: ok (4 broken links found, none once fixed)")
    return 0


HELP_COMMANDS = [[], ["run"], ["lint"], ["explore"], ["matrix"], ["serve"], ["report"], ["defects"], ["faults"],
                 ["invariants"]]
HELP_PATH = re.compile(r"(?<![\w./-])((?:docs|schema|scenarios|harness|scripts|examples)/[\w./-]*\w)")


def check_help(root, hiccup):
    """Every repository path a `--help` text names (docs/SCENARIO-FORMAT.md, …) exists; returns how
    many do not."""
    broken = named = 0
    for command in HELP_COMMANDS:
        text = subprocess.run([hiccup] + command + ["--help"], capture_output=True, text=True).stdout
        for path in sorted(set(HELP_PATH.findall(text))):
            if any(part in path for part in ("NAME", "AGENT", "SCENARIO", "ID")):
                continue  # a placeholder (harness/agents/recipes/NAME.json)
            named += 1
            if not os.path.exists(os.path.join(root, path)):
                broken += 1
                print(f"hiccup {' '.join(command + ['--help'])}: names {path}, which the repository does not have")
    print(f"{named} path(s) named in {len(HELP_COMMANDS)} --help texts, {broken} missing")
    return broken


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", help="the repository root")
    ap.add_argument("--self-test", metavar="WORK_DIR", help="check the checker on a tree it writes there")
    ap.add_argument("--hiccup", help="check the paths the --help texts of this binary name instead")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if a.self_test:
        return self_test(a.self_test)
    if not a.source:
        ap.error("--source or --self-test is required")
    if a.hiccup:
        return 1 if check_help(os.path.abspath(a.source), a.hiccup) else 0
    root = os.path.abspath(a.source)
    files = [os.path.abspath(f) for f in a.files] or markdown_files(root)
    return 1 if check(root, files) else 0


if __name__ == "__main__":
    sys.exit(main())
