#!/usr/bin/env bash
# Session 29's device call (issue 18): a fresh blind sample (blind25: sample seed 31,
# random seed 33), measured and committed unread; beside it, the whole allocation event
# sequences (seqtrace29) of blind24's convolution misses (random32, b1-fp16-adam, at
# 8977671's estimate, measured on an H100: 3-D rnd32_38 -38.9%, rnd32_80 -38.2%;
# 2-D rnd32_169 -11.4%; 1-D rnd32_181 -8.0%; rnd32_89 -3.9%, rnd32_145 -3.3%).
# Also whole sequences at larger batches of committed largest-batch searches whose peak
# memest puts low at the largest batch that ran (8977671; per-sample memory missed,
# which batch 1 and 2 hide): st_nf_resnet50 -3.3%, st_coat_tiny -4.0%, sh_mobilebert_cls
# legacy -4.5% (exact at 128, under from 256), sh_persimmon_cls -4.1%, sh_opt_cls -3.2%.
# Training data, not blind.
#   bash validate/gpu_session29.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-430} L=/tmp/logs29
# the card in the file names: the device may lend an H100 for an H200
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 31 33
seqtrace t1 rnd32_38/b1-fp16-adam,rnd32_169/b1-fp16-adam,rnd32_89/b1-fp16-adam &
seqtrace t2 rnd32_80/b1-fp16-adam,rnd32_181/b1-fp16-adam,rnd32_145/b1-fp16-adam &
seqtrace t3 st_nf_resnet50/bs128-fp16-adam,st_coat_tiny/bs64-fp16-adam,sh_mobilebert_cls/bs256-fp16-adam,sh_persimmon_cls/bs512-fp16-adam,sh_opt_cls/bs1024-bf16-adamw &
finish
collect_blind 31 33 25
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace29-$tag.jsonl
tar -cJf $OUT/logs-session29.tar.xz -C /tmp logs29
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
