#!/bin/sh
# Regenerates what can be made on a machine without a GPU: the torch 1.13 exports in
# models/torch113/ (Debian's python3-torch, python3-torchvision, python3-onnx), and
# models/README.md's table. The top-level models/*.onnx and models/torchscript/*.pt
# were exported on the GPU machine with torch 2.11 (the torch of the measured runs in
# validate/results/) by validate/gpu_run.sh, which runs
#     python3 -m validate export --out models --torchscript models/torchscript
# there; bert_hf and gpt2_hf need transformers, which Debian's python lacks, so they
# exist only as torch 2.11 exports. efficientnet_b0 and convnext_tiny do not export
# with torch 1.13's exporter (StochasticDepth's bernoulli_ has no ONNX symbolic there).
set -e
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
$PY -m validate export --out models/torch113 --skip-missing --readme-root models "$@"
