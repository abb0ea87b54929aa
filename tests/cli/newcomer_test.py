#!/usr/bin/env python3
"""A newcomer's first hour (issue 23), replayed: each finding gives a right answer or a
clear error (one line on stderr, exit 2).

Usage: newcomer_test.py MEMEST    (run from the repository root)
Builds its graphs with the onnx package (Debian's python3-onnx) in a temp dir.
Prints 'N passed, N failed' last.
"""
import json
import os
import subprocess
import sys
import tempfile

from onnx import TensorProto, helper

MEMEST = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="memest-newcomer-")
results = []


def check(name, ok, why=""):
    results.append(bool(ok))
    print("%s  %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": " + why))


def run(args):
    return subprocess.run([MEMEST] + args, capture_output=True, text=True, timeout=300)


def errors(p):
    """stderr's lines that are not warnings."""
    return [l for l in p.stderr.splitlines() if l.strip() and "warning" not in l]


def one_line_error(name, p, *mentions):
    lines = errors(p)
    ok = p.returncode == 2 and len(lines) == 1 and all(m in lines[0] for m in mentions)
    check(name, ok, "exit %d, stderr %r (wanted one line with %r)" % (p.returncode, p.stderr, mentions))


def save(name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def mlp(name, batch):
    """x [batch, 16] -> Gemm -> [batch, 4]; `batch` an int fixes it, as an export without dynamic_axes does."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])
    w = helper.make_tensor("fc.weight", TensorProto.FLOAT, [4, 16], [0.0] * 64)
    return save(name, [helper.make_node("Gemm", ["x", "fc.weight"], ["y"], transB=1)], [x], [y], [w])


# 1. A fixed batch: sweep and check refuse with the re-export advice; the estimate says
# which batch it used.
fixed = mlp("mlp_fixed.onnx", 2)
p = run(["sweep", fixed, "--gpu", "t4"])
one_line_error("sweep on a fixed batch: exit 2, file, problem and re-export advice", p,
               "mlp_fixed.onnx", "fixes the batch at 2", "dynamic_axes", "dynamic_shapes")
p = run(["check", fixed, "--batch", "100000", "--gpu", "t4"])
one_line_error("check --batch 100000 on a fixed batch: exit 2", p, "mlp_fixed.onnx", "dynamic_axes")
p = run(["check", fixed, "--batch", "2", "--gpu", "t4"])
check("check at the file's own batch answers", p.returncode == 0 and p.stdout.startswith("fits"), p.stdout + p.stderr)
p = run([fixed, "--batch", "32", "--loss", "mse"])
check("the estimate's header shows the batch the file fixes",
      p.returncode == 0 and "| batch 2 (fixed by the file) |" in p.stdout.splitlines()[0], p.stdout[:200])
check("the estimate warns that --batch is ignored", "--batch is ignored" in p.stderr, p.stderr)
p = run([fixed, "--batch", "32", "--loss", "mse", "--json"])
check("--json's batch is the file's", p.returncode == 0 and json.loads(p.stdout)["batch"] == 2, p.stdout[:200])
p = run(["sweep", mlp("mlp_free.onnx", "batch"), "--budget", "1GiB", "--loss", "mse", "--max", "64"])
check("a symbolic batch still sweeps", p.returncode == 0 and "Largest batch" in p.stdout, p.stdout + p.stderr)


# 2. An eval-mode export: BatchNorm folded into biased convolutions, no Dropout.
def folded_cnn(name, dropout):
    nodes, inits, prev = [], [], "x"
    for i in range(10):
        # The names torch 1.13's default (eval, folded) export gives the folded weights.
        w, b = "onnx::Conv_%d" % (2 * i + 100), "onnx::Conv_%d" % (2 * i + 101)
        inits += [helper.make_tensor(w, TensorProto.FLOAT, [8, 8, 3, 3], [0.0] * 576),
                  helper.make_tensor(b, TensorProto.FLOAT, [8], [0.0] * 8)]
        nodes += [helper.make_node("Conv", [prev, w, b], ["c%d" % i], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["c%d" % i], ["r%d" % i])]
        prev = "r%d" % i
    nodes.append(helper.make_node("GlobalAveragePool", [prev], ["p"]))
    nodes.append(helper.make_node("Flatten", ["p"], ["f"]))
    last = "f"
    if dropout:
        inits += [helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.5]),
                  helper.make_tensor("train", TensorProto.BOOL, [], [True])]
        nodes.append(helper.make_node("Dropout", ["f", "ratio", "train"], ["fd", "mask"]))
        last = "fd"
    inits += [helper.make_tensor("fc.weight", TensorProto.FLOAT, [10, 8], [0.0] * 80)]
    nodes.append(helper.make_node("Gemm", [last, "fc.weight"], ["y"], transB=1))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])
    return save(name, nodes, [x], [y], inits)


p = run([folded_cnn("folded.onnx", False), "--batch", "4", "--json"])
j = json.loads(p.stdout) if p.returncode == 0 else {}
check("a folded eval export: inference_export true in --json", j.get("inference_export") is True, p.stderr)
check("... with the evidence", "biases the exporter computed" in j.get("inference_evidence", ""),
      str(j.get("inference_evidence")))
p = run([folded_cnn("folded.onnx", False), "--batch", "4"])
warn = [l for l in p.stderr.splitlines() if "exported for inference" in l]
check("... and one warning line with the ONNX advice",
      len(warn) == 1 and "model.train()" in warn[0] and "TrainingMode.TRAINING" in warn[0]
      and "do_constant_folding=False" in warn[0], p.stderr)
p = run([folded_cnn("dropout.onnx", True), "--batch", "4", "--json"])
check("the same CNN with its Dropout is a training export",
      p.returncode == 0 and json.loads(p.stdout)["inference_export"] is False, p.stderr)

# 3. Sizes: a bare number below 1 MiB is a forgotten unit; nothing fitting is exit 1.
free = os.path.join("models", "resnet18.onnx")
p = run(["sweep", free, "--budget", "24"])
one_line_error("--budget 24: exit 2 showing the units", p, "24GiB", "24GB", "MiB")
p = run(["check", free, "--batch", "1", "--budget", "24B"])
check("--budget 24B means bytes: does not fit, exit 1", p.returncode == 1 and "does not fit" in p.stdout,
      p.stdout + p.stderr)
p = run(["check", free, "--batch", "8", "--budget", "25769803776"])
check("a plain byte count still works", p.returncode == 0 and "fits" in p.stdout, p.stdout + p.stderr)
p = run(["sweep", free, "--budget", "100MiB", "--optim", "adam"])
check("sweep where not even batch 1 fits exits 1", p.returncode == 1, "exit %d" % p.returncode)
check("... and says what advise would change", "Not even batch 1 fits" in p.stdout and "advise" in p.stdout,
      p.stdout)
p = run(["sweep", free, "--budget", "100MiB", "--optim", "adam", "--json"])
j = json.loads(p.stdout) if p.stdout.strip() else {}
check("... in --json too", p.returncode == 1 and j.get("max_batch") == 0 and "advice" in j, p.stdout[:300])

# 4. Errors from the argument parser, in words.
p = run(["swep", free, "--gpu", "t4"])
one_line_error("a misspelt subcommand", p, "unknown command 'swep'; did you mean 'sweep'?")
p = run(["nope", free])
one_line_error("an unknown word that is no command and no file", p, "unknown command 'nope'", "no such command or file")
p = run([free, "--amp", "fp8"])
one_line_error("--amp fp8", p, "--amp takes fp16 or bf16, not fp8")
p = run([free, "--optim", "lion"])
one_line_error("--optim lion", p, "--optim takes sgd, adam or adamw, not lion")
p = run(["ops", "--family", "foo"])
one_line_error("ops --family foo lists the families", p, "'foo'", "conv", "norm")
p = run(["ops", "--family", "norm"])
check("ops --family norm prints that family", p.returncode == 0 and "BatchNormalization" in p.stdout, p.stderr)
p = run([free, "--amp", "--batch", "2"])
check("--amp alone still means fp16", p.returncode == 0 and "amp fp16" in p.stdout.splitlines()[0], p.stderr)

# 6. --gpu says which profile it uses; --margin leaves headroom.
p = run(["sweep", free, "--gpu", "a100-40gb", "--json"])
j = json.loads(p.stdout) if p.returncode == 0 else {}
check("--gpu a100-40gb: JSON names the profile", j.get("profile") == "h200-torch2.11", p.stdout[:300])
check("... and says its constants are assumed on this GPU",
      "assumed" in j.get("profile_note", "") and "a100-40gb" in j.get("profile_note", ""), str(j))
p = run(["sweep", free, "--gpu", "a100-40gb"])
check("... in the text report too", "h200-torch2.11" in p.stdout and "assumed" in p.stdout, p.stdout)
p = run(["check", free, "--batch", "8", "--gpu", "h200"])
check("--gpu h200 is the profiled card", "measured on this GPU" in p.stdout, p.stdout)
p = run(["sweep", free, "--gpu", "a100-40gb", "--margin", "5%", "--json"])
m = json.loads(p.stdout) if p.returncode == 0 else {}
check("--margin 5% budgets 95% of the card",
      m.get("budget_bytes") == int(j.get("capacity_bytes", 0) * 0.95) and m.get("margin") == 0.05, str(m)[:300])
check("... and the batch is no larger", m.get("max_batch", 1 << 40) <= j.get("max_batch", 0), str(m)[:200])
p = run(["sweep", free, "--gpu", "a100-40gb", "--margin", "lots"])
one_line_error("--margin lots", p, "--margin", "5%")
p = run(["sweep", "--help"])
check("sweep --help states the margin's default", "--margin" in p.stdout and "0%" in p.stdout, p.stdout[-600:])

# 7 and 8. The report opens with the answer; the parameters' two sizes are told apart;
# the tree is cut at a screen's depth.
p = run(["models/resnet50.onnx", "--batch", "8"])
lines = p.stdout.splitlines()
check("the report opens with the peak", len(lines) > 2 and lines[2].startswith("Peak allocated"), "\n".join(lines[:4]))
j = json.loads(run(["models/resnet50.onnx", "--batch", "8", "--json"]).stdout)
if j["components"]["parameters"] != j["accounting"]["parameter_bytes"]:
    check("the allocated parameters are labelled allocator-rounded", "(allocator-rounded)" in p.stdout, p.stdout[:900])
check("the exact parameter size is labelled exact", " exact)" in p.stdout, p.stdout[:900])
tree = [l for l in lines if "\u251c\u2500" in l or "\u2514\u2500" in l]
deepest = max((l.find("\u251c\u2500") if "\u251c\u2500" in l else l.find("\u2514\u2500")) // 3 + 1 for l in tree)
check("the default tree is at most 2 levels deep", deepest <= 2, "depth %d" % deepest)
check("resnet50's default report fits two screens", len(lines) <= 100, "%d lines" % len(lines))
p = run(["models/resnet50.onnx", "--batch", "8", "--gpu", "t4"])
check("the estimate with --gpu gives a verdict before the components",
      p.stdout.splitlines()[2].startswith(("Fits in", "Does not fit in")), p.stdout[:400])

# `memest targets` lists the profile --target takes and the cards --gpu takes.
p = run(["targets", "--json"])
t = json.loads(p.stdout) if p.returncode == 0 else {"targets": [], "gpus": []}
check("targets lists the default profile first", t["targets"] and t["targets"][0]["name"] == "h200-torch2.11", p.stderr)
check("targets lists every --gpu card with its budget", {"t4", "a100-80gb", "h200"} <= {g["name"] for g in t["gpus"]}
      and all(0 < g["budget_bytes"] < g["total_bytes"] for g in t["gpus"]), p.stdout[:300])
p = run(["models/resnet18.onnx", "--target", "h100-torch9"])
check("an unknown --target names the known ones and `memest targets`",
      p.returncode == 2 and "h200-torch2.11" in p.stderr and "memest targets" in p.stderr, p.stderr)

passed = sum(results)
print("%d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if passed == len(results) else 1)
