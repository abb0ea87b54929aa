#!/usr/bin/env python3
"""Summarize accuracy_all.py's output folders, and what moved between two of them.

    python3 tools/accuracy_summary.py /tmp/acc-new              # median, p90, unders
    python3 tools/accuracy_summary.py /tmp/acc-old /tmp/acc-new # and each row that moved

A row is one case of one comparison (test name, model, config): its peak error in %.
"""
import os
import re
import signal
import statistics
import sys

ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([+-][\d.]+)%")


def rows(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".txt") or "maxbatch" in name:
            continue
        with open(os.path.join(folder, name)) as f:
            for line in f:
                m = ROW.match(line)
                if m:
                    out[(name[:-4], m.group(1), m.group(2))] = float(m.group(6))
    return out


def summary(r):
    errs = sorted(abs(e) for e in r.values())
    p90 = errs[int(0.9 * (len(errs) - 1))] if errs else 0.0
    under = sum(1 for e in r.values() if e < -3.0)
    worst_under = min(r.values(), default=0.0)
    worst_over = max(r.values(), default=0.0)
    return ("%d rows: median %.2f%%, p90 %.2f%%, under by >3%%: %d, worst %+.1f%% / %+.1f%%"
            % (len(errs), statistics.median(errs) if errs else 0.0, p90, under, worst_under, worst_over))


def main(argv):
    if len(argv) not in (1, 2):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    sets = [rows(f) for f in argv]
    for folder, r in zip(argv, sets):
        print("%s: %s" % (folder, summary(r)))
    if len(sets) == 2:
        old, new = sets
        moved = [(k, old[k], new[k]) for k in sorted(old) if k in new and abs(old[k] - new[k]) >= 0.05]
        closer = sum(1 for _, a, b in moved if abs(b) < abs(a))
        print("%d rows moved: %d closer, %d farther" % (len(moved), closer, len(moved) - closer))
        for (test, model, config), a, b in sorted(moved, key=lambda m: abs(m[2]) - abs(m[1]), reverse=True):
            print("  %-45s %-28s %-16s %+7.1f%% -> %+7.1f%%" % (test, model, config, a, b))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    sys.exit(main(sys.argv[1:]))
