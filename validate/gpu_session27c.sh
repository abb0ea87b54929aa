#!/usr/bin/env bash
# Session 27's last device call (issue 18): the whole allocation event sequence of
# sh_deepseek_v32_lm (blind23, now training data) in bf16 and fp32, for its indexer, a
# @torch.no_grad() body: made gradless, memest reads 14% under in bf16, so the GPU holds
# about 65 MB more inside the indexer than memest's ops make.
#   bash validate/gpu_session27c.sh SECONDS
set -u
budget=${1:-150} L=/tmp/logs27c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace d sh_deepseek_v32_lm/b1-bf16-adamw,sh_deepseek_v32_lm/b2-fp32-adam
cp /tmp/res/seq-d.jsonl $OUT/seqtrace27c-$tag.jsonl
tail -n 3 $L/seq-d.log
echo "total $(( $(date +%s) - t0 ))s"
