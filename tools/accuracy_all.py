#!/usr/bin/env python3
"""Every accuracy comparison ctest runs, with any memest binary, to compare two builds.

    ctest --test-dir build --show-only=json-v1 > /tmp/tests.json   # after a configure + build
    python3 tools/accuracy_all.py /tmp/tests.json OLD_BINARY /tmp/acc-old
    python3 tools/accuracy_all.py /tmp/tests.json build/memest /tmp/acc-new
    diff <(grep -h "^peak:" /tmp/acc-old/*.txt) <(grep -h "^peak:" /tmp/acc-new/*.txt)

Writes one file per test (compare's full output, thresholds not enforced). The matrix
archives must be unpacked first (`ctest --test-dir build -R unpack`). Runs three at a time.
"""
import concurrent.futures
import json
import os
import subprocess
import sys


def jobs(tests_json, memest):
    for t in json.load(open(tests_json))["tests"]:
        cmd = t.get("command", [])
        if "compare" not in cmd:
            continue
        cmd = [memest if c.endswith("/memest") and "--memest" in cmd[:i] else c for i, c in enumerate(cmd) if c != "--enforce"]
        wd = [p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"]
        yield t["name"], cmd, wd[0] if wd else os.getcwd()


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tests_json, memest, out = argv
    os.makedirs(out, exist_ok=True)
    memest = os.path.abspath(memest)

    def run(job):
        name, cmd, wd = job
        r = subprocess.run(cmd, cwd=wd, capture_output=True, text=True)
        with open(os.path.join(out, name + ".txt"), "w") as f:
            f.write(r.stdout + r.stderr)
        return name

    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        names = list(ex.map(run, jobs(tests_json, memest)))
    print("%d comparisons -> %s" % (len(names), out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
