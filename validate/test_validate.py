"""Tests of validate/ that need no GPU and no torch: python3 -m unittest validate.test_validate"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FAKE_MEMEST = r'''#!%s
import json, sys
a = sys.argv[1:]
if a[0].endswith("broken.onnx"):
    sys.stderr.write("memest: %%s: unsupported op Foo\n" %% a[0]); sys.exit(2)
b = int(a[a.index("--batch") + 1])
spec = (open(a[0]).read().split() or ["1"]) + ["0"]
factor, excess_mib = float(spec[0]), float(spec[1])
print(json.dumps({"peak_bytes": int(b * 2**20 * factor), "reserved_bytes": int(b * 2**20 * factor * 1.1),
                  "batch": b, "phase": "backward", "components": {}, "layers": [],
                  "workspace_excess_bytes": int(excess_mib * 2**20)}))
'''


def _row(model, batch, measured):
    return {"case": "%s/b" % model, "model": model, "config": "bs%d-fp32-sgd" % batch, "batch": batch,
            "status": "ok", "onnx": model + ".onnx", "peak_allocated": measured, "peak_reserved": measured * 1.1,
            "memest_args": ["--batch", str(batch), "--optim", "sgd", "--loss", "ce"]}


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.memest = os.path.join(d, "memest")
        with open(self.memest, "w") as f:
            f.write(FAKE_MEMEST % sys.executable)
        os.chmod(self.memest, 0o755)
        # the fake "graph" holds the factor the fake memest applies to batch MiB
        # "FACTOR EXCESS_MIB": the second, the 3-D workspace bound the fake memest reports
        for name, factor in (("exact", "1.0"), ("over", "1.04"), ("under", "0.95"), ("broken", "1"),
                             ("bounded", "0.9 2"), ("beyond", "0.9 0.5")):
            with open(os.path.join(d, name + ".onnx"), "w") as f:
                f.write(factor)

    def tearDown(self):
        self.tmp.cleanup()

    def run_compare(self, rows, *extra):
        d = self.tmp.name
        res = os.path.join(d, "r.jsonl")
        with open(res, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        return subprocess.run([sys.executable, "-m", "validate", "compare", res, "--memest", self.memest,
                               "--models-dir", d, "--json", os.path.join(d, "o.json"),
                               "--plot", os.path.join(d, "p.svg")] + list(extra),
                              capture_output=True, text=True, cwd=ROOT)

    def summary(self):
        with open(os.path.join(self.tmp.name, "o.json")) as f:
            return json.load(f)["summary"]

    def test_exact_passes_enforce(self):
        p = self.run_compare([_row("exact", b, b * 2 ** 20) for b in (8, 16, 32)], "--enforce")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        s = self.summary()
        self.assertEqual(s["n"], 3)
        self.assertAlmostEqual(s["median"], 0.0)
        self.assertTrue(os.path.getsize(os.path.join(self.tmp.name, "p.svg")) > 500)

    def test_underestimate_fails_enforce(self):
        rows = [_row("exact", 8, 8 * 2 ** 20), _row("under", 16, 16 * 2 ** 20), _row("over", 32, 32 * 2 ** 20)]
        p = self.run_compare(rows, "--enforce")
        self.assertEqual(p.returncode, 1, p.stdout)
        s = self.summary()
        self.assertEqual(s["under_2pct"], 1)
        self.assertEqual(s["under_3pct"], 1)
        self.assertAlmostEqual(s["worst"], 0.05, places=3)
        self.assertAlmostEqual(s["median"], 0.04, places=3)
        # without --enforce the report still exits 0
        self.assertEqual(self.run_compare(rows).returncode, 0)

    def test_the_3d_workspace_bound_is_counted_and_enforced(self):
        # At batch 16 (16 MiB measured) both estimate 14.4 MiB, 10% under. The bound of 2 MiB
        # covers the first (16.4 MiB); 0.5 MiB leaves the second 6.9% under (14.9 MiB).
        rows = [_row("bounded", 16, 16 * 2 ** 20), _row("beyond", 16, 16 * 2 ** 20), _row("exact", 8, 8 * 2 ** 20)]
        self.run_compare(rows)
        s = self.summary()
        self.assertEqual(s["bounded"], 2)
        self.assertEqual(s["bound_under_2pct"], 1)
        th = os.path.join(self.tmp.name, "th.json")
        for allowed, rc in ((1, 0), (0, 1)):
            with open(th, "w") as f:
                json.dump({"bar": {}, "regression": {"k": {"bound_under_2pct": allowed}}}, f)
            p = self.run_compare(rows, "--enforce", "--thresholds", th, "--key", "k")
            self.assertEqual(p.returncode, rc, p.stdout)
        self.assertIn("beyond the estimate + the 3-D workspace bound", p.stdout)

    def test_memest_failure_is_reported(self):
        p = self.run_compare([_row("exact", 8, 8 * 2 ** 20), _row("broken", 8, 8 * 2 ** 20)], "--enforce")
        self.assertEqual(p.returncode, 1)
        self.assertIn("unsupported op Foo", p.stdout)
        self.assertEqual(self.summary()["memest_failures"], 1)

    def test_missing_results_is_usage_error(self):
        p = subprocess.run([sys.executable, "-m", "validate", "compare", "/nonexistent.jsonl", "--memest",
                            self.memest], capture_output=True, text=True, cwd=ROOT)
        self.assertEqual(p.returncode, 2)

    def test_percentile(self):
        from validate.compare import percentile
        self.assertEqual(percentile([1, 2, 3, 4], 0.5), 2.5)
        self.assertAlmostEqual(percentile(list(range(11)), 0.9), 9.0)


class ZooTest(unittest.TestCase):
    def test_configs_and_args(self):
        from validate import zoo
        self.assertGreaterEqual(len(zoo.ZOO), 15)
        e = zoo.BY_NAME["gpt_mini"]
        c = zoo.parse_config(e, "b1-fp16-sgdm")
        self.assertEqual(c.memest_args(e), ["--batch", "8", "--optim", "sgd", "--momentum", "0.9", "--amp", "fp16",
                                            "--loss", "ce", "--dim", "seq=256"])
        self.assertEqual(zoo.parse_config(e, "bs3-fp32-adam").memest_args(e)[:4], ["--batch", "3", "--optim", "adam"])
        with self.assertRaises(ValueError):
            zoo.parse_config(e, "b3-fp32-adam")

    def test_finetune_set(self):
        from validate import zoo
        entries = zoo.select(None, "finetune")
        self.assertGreaterEqual(sum(len(e.configs) for e in entries), 30)
        names = {e.name for e in entries}
        self.assertFalse(names & (set(zoo.BY_NAME) | set(zoo.HOLDOUT_BY_NAME) | set(zoo.BLIND_BY_NAME)))
        self.assertEqual(len(names), len(entries))
        for e in entries:
            for c in e.configs:
                zoo.parse_config(e, c)
        e = zoo.lookup("llama1b_lora_acc4")
        self.assertEqual(e.onnx, "finetune/llama1b_lora.onnx")  # shares the graph of llama1b_lora
        self.assertEqual(zoo.parse_config(e, "b1-bf16-adamw").memest_args(e)[-4:],
                         ["--train", "*lora_*", "--grad-accum", "4"])
        self.assertEqual(zoo.lookup("resnet50_fc").finetune_args(), ["--train", "fc"])

    def test_trainable_patterns(self):
        from validate.zoo import trainable
        self.assertTrue(trainable("fc.weight", ("fc",)))
        self.assertFalse(trainable("fc2.weight", ("fc",)))  # a dotted prefix, not a string prefix
        self.assertTrue(trainable("model.base_model.model.q_proj.lora_A.default.weight", ("*lora_*",)))
        self.assertFalse(trainable("model.base_model.model.q_proj.base_layer.weight", ("*lora_*",)))
        self.assertFalse(trainable("layer1.0.conv1.weight", freeze=("layer1",)))
        self.assertTrue(trainable("layer10.0.conv1.weight", freeze=("layer1",)))
        self.assertTrue(trainable("anything"))

    def test_committed_models_exist(self):
        from validate import zoo
        for e in zoo.ZOO:
            self.assertTrue(os.path.isfile(os.path.join(ROOT, "models", e.onnx)), e.onnx)

    def test_holdout_is_separate(self):
        from validate import zoo
        self.assertGreaterEqual(len(zoo.HOLDOUT), 6)
        self.assertFalse({e.name for e in zoo.HOLDOUT} & set(zoo.BY_NAME))
        self.assertEqual([e.name for e in zoo.select(None)], [e.name for e in zoo.ZOO])  # default unchanged
        self.assertEqual(zoo.select("swin_t", "holdout")[0].onnx, "holdout/swin_t.onnx")
        with self.assertRaises(SystemExit):
            zoo.select("swin_t")  # not in the zoo
        with open(os.path.join(ROOT, "validate", "results", "holdout-h200-torch2.11.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        for r in rows:
            self.assertTrue(r["onnx"].startswith("holdout/"), r["onnx"])
            self.assertTrue(os.path.isfile(os.path.join(ROOT, "models", r["onnx"])), r["onnx"])


class SampleDrawTest(unittest.TestCase):
    """The blind draw's filters and fill order (no library needed: _usable is replaced)."""

    def test_type_known_under_any_task(self):
        from validate import sample
        known = {"bart", "mbart_cls", "videomae_vid", "resnet50"}
        types = sample._known_types(known)
        self.assertEqual(types, {"mbart", "videomae"})
        self.assertTrue(sample._model_type_known("sh_bart_s2s", known, types))  # the corpus's type
        self.assertTrue(sample._model_type_known("sh_mbart_s2s", known, types))  # a head on a drawn type
        self.assertFalse(sample._model_type_known("sh_pegasus_x_s2s", known, types))
        self.assertFalse(sample._model_type_known("sh_mbart_lm", known, types))  # older tasks: by name only
        self.assertFalse(sample._model_type_known("st_bart", known, types))

    def test_each_pool_fills_what_the_other_cannot(self):
        from validate import sample
        usable, draws = sample._usable, []
        try:
            sample._usable = lambda c: draws.append(c) or not c.endswith("x")
            self.assertEqual(sample._take(["a", "bx", "c", "d"], 2), (["a", "c"], ["d"]))
            self.assertEqual(sample._take(["a", "bx"], 2), (["a"], []))
            self.assertEqual(draws, ["a", "bx", "c", "a", "bx"])  # nothing looked at twice within a take
        finally:
            sample._usable = usable

    def test_draw_takes_other_pools_when_timm_runs_out(self):
        from validate import sample
        saved = sample._usable, sample._known, sample._candidates
        try:
            sample._usable = lambda c: True
            sample._known = lambda: {"t5", "bert_cls"}
            sample._candidates = lambda: ["st_a", "st_b", "sh_t5_s2s", "sh_bert_s2s"] + [
                "sh_m%d_s2s" % i for i in range(6)]
            names = sample.draw(1, 6)
            self.assertEqual(len(names), 6)
            self.assertEqual(sorted(n for n in names if n.startswith("st_")), ["st_a", "st_b"])
            self.assertFalse({"sh_t5_s2s", "sh_bert_s2s"} & set(names))  # known types
            self.assertEqual(names, sample.draw(1, 6))  # a seed names the same models
        finally:
            sample._usable, sample._known, sample._candidates = saved


class TraceLabelTest(unittest.TestCase):
    def test_blocks_get_module_and_node_labels(self):
        from validate import trace

        class A:  # what trace.Annotator records, without torch
            fwd = [(100, 1, "<root>"), (110, 1, "conv"), (120, -1, "conv"), (130, -1, "<root>")]
            bwd = [(300, "ConvolutionBackward0", "conv"), (310, "torch::autograd::AccumulateGrad", "")]
            nodes_hooked = 2
        rows = [{"it": -1, "phase": "model", "t_us": 50, "allocated": 0, "peak": 0},
                {"it": 0, "phase": "forward", "t_us": 200, "allocated": 0, "peak": 0},
                {"it": 0, "phase": "backward", "t_us": 400, "allocated": 0, "peak": 0}]
        ev = [{"action": "alloc", "addr": 1, "size": 4096, "time_us": 115,
               "frames": [{"filename": "/x/site-packages/torch/nn/modules/conv.py", "line": 548, "name": "f"}]},
              {"action": "alloc", "addr": 2, "size": 8192, "time_us": 305, "frames": []},
              {"action": "alloc", "addr": 3, "size": 1024, "time_us": 312, "frames": []}]
        red = trace.reduce_snapshot({"device_traces": [ev]}, rows, 13312, annot=A(), full=True, n_frames=4)
        top = red["live_at_peak"]
        self.assertEqual(top[0]["bw_node"], "ConvolutionBackward0")
        self.assertEqual(top[0]["bw_module"], "conv")
        self.assertEqual(top[1]["module"], "conv")
        self.assertEqual(top[2]["bw_node"], "torch::autograd::AccumulateGrad")
        self.assertEqual(top[2]["bw_module"], "conv")  # the module tag carries over untagged nodes
        self.assertEqual(len(red["live_at_peak_all"]), 3)
        self.assertEqual(red["stack_table"][red["live_at_peak_all"][1][3]], ["torch/nn/modules/conv.py:548:f"])


class MeasuredResultsTest(unittest.TestCase):
    def test_results_are_consistent(self):
        path = os.path.join(ROOT, "validate", "results", "h200-torch2.11.jsonl")
        with open(path) as f:
            rows = [json.loads(line) for line in f]
        self.assertGreaterEqual(len(rows), 100)
        for r in rows:
            if r["status"] != "ok":
                continue
            peaks = [p["peak"] for p in r["phases"]]
            self.assertEqual(r["peak_allocated"], max(peaks), r["case"])
            self.assertGreaterEqual(r["peak_reserved"], r["peak_allocated"], r["case"])
            self.assertEqual(r["after_model"] >= r["param_bytes"], True, r["case"])


class StripTest(unittest.TestCase):
    def test_small_tensors_stay_inline(self):
        try:
            import numpy as np
            import onnx
            from onnx import helper, numpy_helper, TensorProto
        except ImportError:
            self.skipTest("onnx not installed")
        from validate.onnx_strip import strip_weights
        w = numpy_helper.from_array(np.ones((8, 16), dtype=np.float32), "w")
        shape = numpy_helper.from_array(np.array([-1, 16], dtype=np.int64), "shape")
        const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.zeros(100, np.float32)))
        g = helper.make_graph([const, helper.make_node("Reshape", ["x", "shape"], ["y"]),
                               helper.make_node("MatMul", ["y", "w"], ["z"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 16])],
                              initializer=[w, shape])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            n = strip_weights(helper.make_model(g), path)
            self.assertEqual(n, 2)
            self.assertEqual(os.listdir(d), ["m.onnx"])  # the data file is gone
            m = onnx.load(path, load_external_data=False)
            inits = {t.name: t for t in m.graph.initializer}
            self.assertEqual(inits["w"].data_location, TensorProto.EXTERNAL)
            self.assertEqual(list(inits["w"].dims), [8, 16])
            self.assertEqual(list(numpy_helper.to_array(inits["shape"])), [-1, 16])


class CudnnTableTest(unittest.TestCase):
    """validate/cudnn_table.py's fit of a + b * N to the probed batches."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "validate"))
        import cudnn_table
        self.affine = cudnn_table.affine

    def test_points_on_a_line_give_that_line(self):
        # resnet18's layer1 dgrad: 12993024 B at n=8, 411189760 at n=256, and 64 on the line.
        pts = {8: 12993024, 64: 102908416, 256: 411189760}
        self.assertEqual(self.affine(pts), (147968, 1605632))

    def test_never_under_a_measured_batch(self):
        # resnet50/18's 3x3 512-channel dgrad at 7x7 (MiB): 15.13, 21.25, 33.5, 74. The line
        # through n=128 and 256 would cross zero; per sample from n=32 gives 121 MiB at 256.
        mib = 2**20
        pts = {32: int(15.13 * mib), 64: int(21.25 * mib), 128: int(33.5 * mib), 256: int(74.0 * mib)}
        a, b = self.affine(pts)
        for n, w in pts.items():
            self.assertGreaterEqual(a + b * n, w)
        # Through the largest batch's and the smallest's (the least excess), to the bytes
        # that rounding the slope up adds.
        self.assertLessEqual(a + b * 256 - pts[256], 256)
        self.assertLessEqual(a + b * 32 - pts[32], 256)
        self.assertLess(a + b * 64, 24 * mib)

    def test_a_workspace_that_shrinks_with_the_batch_stays_covered(self):
        # cuDNN switched engines: 181 MB at n=32, none at 64 and 128. A flat line covers it.
        pts = {32: 181823583, 64: 0, 128: 0}
        self.assertEqual(self.affine(pts), (181823583, 0))

    def test_one_batch_is_per_sample(self):
        self.assertEqual(self.affine({64: 6400}), (0, 100))
        self.assertEqual(self.affine({64: 6401}), (0, 101))  # rounded up: never under


class CudnnModelTest(unittest.TestCase):
    """validate/cudnn_model.py's envelope fit (needs numpy: /usr/bin/python3 has it)."""

    def setUp(self):
        try:
            import numpy  # noqa: F401
        except ImportError:
            self.skipTest("numpy is not installed for this python")
        sys.path.insert(0, os.path.join(ROOT, "validate"))
        import cudnn_model
        self.m = cudnn_model

    def test_input_plus_output_plus_weight_is_found_and_covers(self):
        import numpy as np
        mib = 1 << 20
        terms = np.array([[100 * mib, 200 * mib, 5 * mib], [400 * mib, 10 * mib, 30 * mib],
                          [64 * mib, 64 * mib, 64 * mib]], float)
        meas = terms.sum(1)
        self.assertEqual(self.m.fit(terms, meas, 0.0), (16, 16, 16, 0))

    def test_a_miss_share_lets_an_outlier_go(self):
        import numpy as np
        terms = np.array([[100 << 20, 0, 0]] * 20, float)
        meas = np.array([100 << 20] * 19 + [350 << 20], float)
        self.assertEqual(self.m.fit(terms, meas, 0.05)[0], 16)
        cx, _, _, c0 = self.m.fit(terms, meas, 0.0)
        self.assertGreaterEqual(cx / 16 * (100 << 20) + c0, (350 << 20) * 0.99 - (1 << 20))

class ParallelTest(unittest.TestCase):
    """validate/parallel.py's pieces that need no torch."""

    def test_flags_per_mode(self):
        from validate.parallel import parallel_args
        self.assertEqual(parallel_args("none", 1), [])
        self.assertEqual(parallel_args("ddp", 1), ["--ddp", "1"])
        self.assertEqual(parallel_args("ddp-view", 2), ["--ddp", "2", "--bucket-view"])
        self.assertEqual(parallel_args("fsdp", 4), ["--fsdp", "4"])

    def test_cases_cover_every_mode(self):
        from validate.parallel import case_list
        cases = case_list("bert_hf", "b1-fp16-adamw", ["ddp", "fsdp"])
        self.assertEqual(cases, [("bert_hf", "b1-fp16-adamw", "ddp"), ("bert_hf", "b1-fp16-adamw", "fsdp")])
        self.assertEqual(len(case_list(None, None, ["none", "ddp", "ddp-view", "fsdp"])), 4 * 12)

    def test_block_paths_mirror_checkpoint_blocks(self):
        from validate.parallel import block_paths

        class M:  # named_modules()/children() of a tiny module tree
            def __init__(self, tree):
                self.tree = tree

            def children(self):
                return iter(self.tree.get("_children", []))

            def named_modules(self):
                return self.tree["_all"]

        leaf = M({})
        box = M({"_children": [leaf]})
        names = [("", box), ("embed", leaf), ("model", box), ("model.layers", box), ("model.layers.0", box),
                 ("model.layers.0.fc", leaf), ("model.layers.0.sub.1", box), ("model.layers.1", box),
                 ("head", M({"_children": [leaf]})), ("head.0", leaf)]
        root = M({"_all": names})
        # head.0 is a single layer (no children): not a block, as in estimator/segments.cc.
        self.assertEqual(block_paths(root), ["model.layers.0", "model.layers.1"])

    def test_compare_reads_the_mode(self):
        with tempfile.TemporaryDirectory() as d:
            memest = os.path.join(d, "memest")
            with open(memest, "w") as f:
                f.write("#!%s\nimport json, sys\nprint(json.dumps({'peak_bytes': 100 if '--ddp' in sys.argv "
                        "else 50, 'phase': 'backward'}))\n" % sys.executable)
            os.chmod(memest, 0o755)
            open(os.path.join(d, "m.onnx"), "w").close()
            row = dict(_row("m", 1, 100), mode="ddp", world_size=1)
            res = os.path.join(d, "r.jsonl")
            with open(res, "w") as f:
                f.write(json.dumps(row) + "\n")
            out = os.path.join(d, "c.json")
            subprocess.run([sys.executable, "-m", "validate", "compare", res, "--memest", memest, "--models-dir", d,
                            "--json", out], cwd=ROOT, capture_output=True, text=True)
            with open(out) as f:
                cases = json.load(f)["cases"]
            self.assertEqual(cases[0]["estimate"], 100)
            self.assertEqual(cases[0]["config"], "bs1-fp32-sgd/ddp")


if __name__ == "__main__":
    unittest.main()
