#!/usr/bin/env bash
# Session 31's second device call: the rest of blind27. The first call's draw (sample seed
# 33) found 20 architectures, all timm: every transformers model type the draw can build
# is in a set already. A second timm draw (sample seed 36, disjoint: sample33's names are
# committed and so known) brings the sample to 40 architectures, and its largest-batch
# searches (three parts of four names, spread over the 20) to at least ten. Committed
# unread, compared once.
#   bash validate/gpu_session31b.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-420} L=/tmp/logs31b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
s=36
# As run (a0613f8) these steps were written out here, with the searches' parts 2-5, 9-12
# and 16-19; gpu_lib.sh's blind_architectures now does the same (parts 2-5, 8-11, 15-18).
blind_architectures $s
finish
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample$s-$tag.jsonl
cat /tmp/res/mb-*.jsonl > $OUT/sample$s-maxbatch-$tag.jsonl
tar -cJf $OUT/matrix-blind27b.tar.xz -C /tmp/matrix .
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
