#!/usr/bin/env python3
"""`memest advise`: the what-ifs it offers, ranked by peak, with savings against the
current configuration and the same largest batch that `memest sweep` finds.

Usage: advise_test.py MEMEST    (run from the repository root)
Prints 'N passed, N failed' last.
"""
import json
import os
import subprocess
import sys

memest = os.path.abspath(sys.argv[1])
MODEL = "models/resnet18.onnx"
ARGS = [MODEL, "--batch", "32", "--optim", "adam", "--budget", "6GiB"]
results = []


def check(name, ok, why=""):
    results.append(bool(ok))
    print("%s  %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": " + why))


def run(args):
    return subprocess.run([memest] + args, capture_output=True, text=True, timeout=300)


p = run(["advise"] + ARGS + ["--json"])
check("advise --json exits 0", p.returncode == 0, p.stderr.strip())
j = json.loads(p.stdout) if p.returncode == 0 else {"what_ifs": []}
rows = {w["key"]: w for w in j["what_ifs"]}
for key in ["current", "amp_fp16", "amp_bf16", "fused_adam", "sgd", "accumulate_2", "accumulate_4", "accumulate_8",
            "train_head", "freeze_half"]:
    check("offers %s" % key, key in rows, ", ".join(rows))
check("current comes first", j["what_ifs"] and j["what_ifs"][0]["key"] == "current")
peaks = [w["peak_bytes"] for w in j["what_ifs"][1:] if "error" not in w]
check("ranked by peak", peaks == sorted(peaks), str(peaks))
if "current" in rows:
    cur = rows["current"]
    est = json.loads(run(ARGS[:5] + ["--json"]).stdout)
    check("current is the estimate", cur["peak_bytes"] == est["peak_bytes"], "%d vs %d" % (cur["peak_bytes"], est["peak_bytes"]))
    check("savings against current", all(w["saving_bytes"] == cur["peak_bytes"] - w["peak_bytes"]
                                         for w in j["what_ifs"] if "error" not in w))
    sweep = json.loads(run(["sweep"] + ARGS + ["--json"]).stdout)
    check("current's largest batch is sweep's", cur["max_batch"] == sweep["max_batch"],
          "%d vs %d" % (cur["max_batch"], sweep["max_batch"]))
    if "amp_bf16" in rows:
        sweep = json.loads(run(["sweep"] + ARGS + ["--amp", "bf16", "--json"]).stdout)
        check("AMP bf16's largest batch is sweep's", rows["amp_bf16"]["max_batch"] == sweep["max_batch"],
              "%d vs %d" % (rows["amp_bf16"]["max_batch"], sweep["max_batch"]))
        est = json.loads(run(ARGS[:5] + ["--amp", "bf16", "--json"]).stdout)
        check("AMP bf16's peak is the estimate's", rows["amp_bf16"]["peak_bytes"] == est["peak_bytes"])
    if "accumulate_4" in rows:
        acc = rows["accumulate_4"]
        est = json.loads(run([MODEL, "--batch", "8", "--optim", "adam", "--grad-accum", "4", "--json"]).stdout)
        check("accumulation 4 is --grad-accum 4 at batch 8", acc["batch"] == 8 and acc["peak_bytes"] == est["peak_bytes"])
        sweep = json.loads(run(["sweep"] + ARGS + ["--grad-accum", "4", "--json"]).stdout)
        check("accumulation 4 fits 4x sweep's micro-batch", acc["max_batch"] == 4 * sweep["max_batch"],
              "%d vs 4 x %d" % (acc["max_batch"], sweep["max_batch"]))
    if "train_head" in rows:
        est = json.loads(run(ARGS[:5] + ["--train", "fc", "--json"]).stdout)
        check("head only is --train fc", rows["train_head"]["peak_bytes"] == est["peak_bytes"])

# LoRA is offered where peft would add it by default (a BERT's query/value), and is --lora 8.
BERT = ["models/bert_hf.onnx", "--batch", "16", "--dim", "seq=128", "--optim", "adamw"]
p = run(["advise"] + BERT + ["--json"])
rows = {w["key"]: w for w in json.loads(p.stdout)["what_ifs"]} if p.returncode == 0 else {}
check("offers LoRA for a BERT", "lora_8" in rows, p.stderr.strip())
if "lora_8" in rows:
    est = json.loads(run(BERT + ["--lora", "8", "--json"]).stdout)
    check("LoRA's peak is --lora 8's", rows["lora_8"]["peak_bytes"] == est["peak_bytes"])
check("no LoRA for a CNN", "lora_8" not in {w["key"] for w in j["what_ifs"]})

p = run(["advise"] + ARGS)
check("advise prints a table", p.returncode == 0 and "What-if" in p.stdout and "Largest batch" in p.stdout, p.stderr)
p = run(["advise", MODEL, "--batch", "8", "--amp", "bf16"])
check("no AMP what-ifs when AMP is on, no Adam ones for SGD",
      p.returncode == 0 and "AMP" not in p.stdout and "Adam" not in p.stdout, p.stdout)
check("without a budget, says how to get the largest batch", "--budget" in p.stdout, p.stdout)

passed = sum(results)
print("%d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if passed == len(results) else 1)
