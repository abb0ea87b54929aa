#!/usr/bin/env python3
"""Every example a user is shown runs: the command lines in `memest --help`, in each
subcommand's `--help`, and in README.md's code blocks, against the repository's models.

Usage: examples_test.py MEMEST    (run from the repository root)
A README line is run when it starts with `memest ` or `build/memest ` inside a fenced
block whose info string is not `text` (```text blocks hold synopses, with placeholders).
A line whose trailing comment says `not run` is skipped (a user's own file), and said so. `memest` is the
binary under test; a file the example writes (--timeline out.svg, --events out.tsv) goes to a temp dir.
A .pt example is skipped, and said so, where the TorchScript helper is not built.
Exit 0 is wanted; `check` may also answer 1 ("does not fit").
Prints 'N passed, N failed' last.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

MEMEST = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="memest-examples-")
results = []


def check(name, ok, why=""):
    results.append(bool(ok))
    print("%s  %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": " + why))


def helper_built():
    here = os.path.dirname(MEMEST)
    return any(os.path.exists(os.path.join(here, rel))
               for rel in ("memest-torchscript", "frontends/torchscript/memest-torchscript"))


def help_examples():
    out = subprocess.run([MEMEST, "--help"], capture_output=True, text=True).stdout
    # The lines under "Examples", up to the next blank line (the synopsis above has placeholders).
    section = out.split("\nExamples", 1)[1].split("\n\n", 1)[0] if "\nExamples" in out else ""
    found = [("memest --help", l.strip()) for l in section.splitlines() if l.strip().startswith("memest ")]
    subs = re.findall(r"^  (\w+)\s{2,}", out.split("Subcommands:")[1].split("\n\n")[0], re.M)
    check("--help lists subcommands", len(subs) >= 5, out[:400])
    for sub in subs:
        text = subprocess.run([MEMEST, sub, "--help"], capture_output=True, text=True).stdout
        ex = [l.split("Example:", 1)[1].strip() for l in text.splitlines() if "Example:" in l]
        check("`memest %s --help` shows an example" % sub, len(ex) == 1, text[-300:])
        found += [("memest %s --help" % sub, e) for e in ex]
    return found


def readme_examples():
    found, fence = [], None
    for line in open("README.md", encoding="utf-8"):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip()
            continue
        if fence is None or fence == "text":
            continue
        if stripped.startswith(("memest ", "build/memest ")):
            found.append(("README.md", stripped))
    return found


def run_example(where, line):
    if " #" in line and "not run" in line.split(" #", 1)[1]:
        print("skip  %s: %s (marked: not run)" % (where, line))
        return
    args = shlex.split(line, comments=True)
    args = args[1:]
    if any(a.endswith(".pt") for a in args) and not helper_built():
        print("skip  %s: %s (the TorchScript helper is not built)" % (where, line))
        return
    # What an example writes goes to the temp dir, not the checkout.
    args = [os.path.join(TMP, os.path.basename(a)) if a.endswith((".svg", ".html", ".tsv")) else a for a in args]
    missing = [a for a in args if a.endswith((".onnx", ".pt")) and not os.path.exists(a)]
    if missing:
        check("%s: %s" % (where, line), False, "names files not in the repository: %s" % missing)
        return
    p = subprocess.run([MEMEST] + args, capture_output=True, text=True, timeout=300)
    allowed = (0, 1) if args and args[0] == "check" else (0,)
    check("%s: %s" % (where, line), p.returncode in allowed and p.stdout.strip(),
          "exit %d: %s" % (p.returncode, p.stderr.strip()[:300]))


examples = help_examples()
check("--help has examples", any(w == "memest --help" for w, _ in examples))
readme = readme_examples()
check("README.md has examples", len(readme) >= 8, "%d found" % len(readme))
for where, line in examples + readme:
    run_example(where, line)

passed = sum(results)
print("%d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if passed == len(results) else 1)
