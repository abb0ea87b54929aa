#!/usr/bin/env bash
# Session 33's device call (issue 18): a fresh blind sample (blind29: sample seed 35,
# random seed 37), measured and committed unread; beside it, training data, not blind:
# whole allocation event sequences (seqtrace33) of committed cases memest puts low that no
# trace holds yet (st_cpubone_s0 bf16 -5.8%, st_vit_small_r26_s32_384 fp32 -5.0%,
# st_coat_lite_tiny fp16 -4.3%, st_nf_ecaresnet26 fp32 -3.3%, st_mvitv2_base fp32 -3.2%).
#   bash validate/gpu_session33.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-440} L=/tmp/logs33
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 35 37
seqtrace t1 st_cpubone_s0/b1-bf16-adamw,st_coat_lite_tiny/b1-fp16-adam,st_nf_ecaresnet26/b2-fp32-adam &
seqtrace t2 st_vit_small_r26_s32_384/b2-fp32-adam,st_mvitv2_base/b1-fp32-adamw &
finish
collect_blind 35 37 29
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace33-$tag.jsonl
tar -cJf $OUT/logs-session33.tar.xz -C /tmp logs33
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
