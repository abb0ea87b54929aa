#!/usr/bin/env bash
# Session 35's second device call: training data (seqtrace35b). The whole allocation
# event sequences of blind31's misses and of a row the gradient-path change moved under:
# sh_deepseek_v32_lm bf16 (its no_grad indexer, -0.2% -> -7.0% once memest keeps nothing
# for it), rnd39_186 / rnd39_91 (3-D dilated convolutions, -59% / -23%), rnd39_142,
# rnd39_24, rnd39_43 (2-D / 3-D, -10% / -6% / -8%), st_lamhalobotnet50ts_256 bf16 (+3.1%
# after the expanded bmm copies).
#   bash validate/gpu_session35b.sh SECONDS
set -u
budget=${1:-150} L=/tmp/logs35b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 sh_deepseek_v32_lm/b1-bf16-adamw &
seqtrace t2 rnd39_186/b1-fp16-adam,rnd39_91/b1-fp16-adam &
seqtrace t3 rnd39_142/b1-fp16-adam,rnd39_24/b1-fp16-adam,rnd39_43/b1-fp16-adam &
seqtrace t4 st_lamhalobotnet50ts_256/b1-bf16-adamw &
finish
cat /tmp/res/seq-*.jsonl | xz -9 > $OUT/seqtrace35b-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
