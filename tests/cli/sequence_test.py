#!/usr/bin/env python3
"""memest's request sequences against whole-case GPU traces (tools/sequence_diff.py).

The caching allocator's reserved memory, and whether a batch fits under a cap, follow the
order of every request and free. Each case here must keep its match ratio (difflib over
requests and frees of 1 MB and more) at or above the floor measured when it was set, so
that a change which makes the sequence less like the GPU's is seen even where the peaks
happen not to move.

    python3 tests/cli/sequence_test.py build/memest
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from sequence_diff import match_ratio  # noqa: E402

R = "validate/results/"
# (traces, case, file, floor): floors measured at the commit that added them, rounded down.
CASES = [
    (R + "traces8-h200-torch2.11.jsonl", "resnet18/b2-fp32-adamw", "models/dynamo/resnet18.onnx", 0.97),
    (R + "traces8-h200-torch2.11.jsonl", "resnet34/b2-fp32-adamw", "models/dynamo/blind/resnet34.onnx", 0.87),
    (R + "traces8-h200-torch2.11.jsonl", "resnet50/b1-bf16-adamw", "models/dynamo/resnet50.onnx", 0.93),
    (R + "traces9-h200-torch2.11.jsonl", "regnet_y_400mf/b2-fp32-adamw", "models/holdout/regnet_y_400mf.onnx", 0.98),
    (R + "traces9-h200-torch2.11.jsonl", "resnext50_32x4d/b2-fp32-adamw", "models/holdout/resnext50_32x4d.onnx", 0.90),
    (R + "rtrace-h200-torch2.11.jsonl", "efficientnet_b0/b2-fp32-adamw", "models/dynamo/efficientnet_b0.onnx", 0.97),
    (R + "rtrace-h200-torch2.11.jsonl", "mobilenet_v2/b1-fp32-sgd", "models/dynamo/mobilenet_v2.onnx", 0.97),
    (R + "cases-h200-torch2.11.jsonl", "vit_b_16/bs194-fp32-sgd", "models/dynamo/vit_b_16.onnx", 0.71),
    (R + "cases-h200-torch2.11.jsonl", "gpt2_hf/bs136-fp16-adam", "models/dynamo/gpt2_hf.onnx", 0.83),
    (R + "cases-h200-torch2.11.jsonl", "unet/bs124-fp32-sgd", "models/dynamo/unet.onnx", 0.84),
    (R + "traces4-h200-torch2.11.jsonl.xz", "llama_hf/b1-fp16-adam", "models/dynamo/holdout/llama_hf.onnx", 0.85),
    (R + "traces7-h200-torch2.11.jsonl.xz", "googlenet/b1-fp32-sgd", "models/dynamo/holdout/googlenet.onnx", 0.96),
    (R + "traces4-h200-torch2.11.jsonl.xz", "regnet_x_800mf/b1-fp32-sgd", "models/dynamo/blind/regnet_x_800mf.onnx", 0.82),
]


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    failed = 0
    for traces, case, onnx, floor in CASES:
        r = match_ratio(traces, case, onnx, memest=argv[1])
        ok = r >= floor
        failed += not ok
        print("%-4s %-32s %-40s %.3f (floor %.2f)" % ("ok" if ok else "FAIL", case, onnx, r, floor))
    print("%d of %d at or above their floors" % (len(CASES) - failed, len(CASES)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
