"""`python3 -m validate families`: accuracy per model family (issue 18's report).

    python3 -m validate families COMPARE_JSON [COMPARE_JSON ...] [--markdown OUT.md]

Reads what `validate compare --json` wrote and groups the cases by the family of each
model (validate/zoo.py's Entry.family: corpus, random and sample sets included): cases,
median and p90 of |error|, the worst case and how many are under by more than 3%.
"""
import argparse
import json
import sys


def family_of(name):
    from validate import zoo
    try:
        return zoo.lookup(name).family or "other"
    except Exception:
        return "other"


def _pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return 0.0
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def table(cases):
    groups = {}
    for c in cases:
        if c.get("error") is None:
            continue
        groups.setdefault(family_of(c["model"]), []).append(c)
    rows = ["| family | models | cases | median | p90 | worst | under by > 3% |", "|---|---|---|---|---|---|---|"]
    for fam in sorted(groups):
        cs = groups[fam]
        errs = [c["error"] for c in cs]
        absd = [abs(e) for e in errs]
        worst = max(errs, key=abs)
        rows.append("| %s | %d | %d | %.2f%% | %.2f%% | %+.1f%% | %d |" % (
            fam, len({c["model"] for c in cs}), len(cs), 100 * _pct(absd, 0.5), 100 * _pct(absd, 0.9), 100 * worst,
            sum(e < -0.03 for e in errs)))
    return "\n".join(rows)


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate families")
    p.add_argument("compare_json", nargs="+")
    p.add_argument("--markdown", default=None)
    args = p.parse_args(argv)
    cases = []
    for f in args.compare_json:
        with open(f) as fh:
            cases += json.load(fh)["cases"]
    text = table(cases)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
