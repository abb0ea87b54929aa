#!/usr/bin/env bash
# Session 20's third GPU call: training data for the next session, after blind16's
# comparison. traces32: st_nextvit_small bf16 (+9.0%, sample22's worst after the session's
# changes). capprobe: the largest batch near the cap for blind16's LMs, whose answers were
# 10-14% under (sh_ctrl_lm at 1302/1303, sh_exaone4_lm at 1436/1437).
#   bash validate/gpu_session20c.sh
set -u
export PYTHONUNBUFFERED=1
tag=h200-torch2.11
python3 -m validate measure --set sample:22:30 --models st_nextvit_small --configs b1-bf16-adamw \
  --trace st_nextvit_small/b1-bf16-adamw --only-trace --trace-detail --trace-out $OUT/traces32-$tag.jsonl 2>&1 | tail -2
python3 -m validate capprobe --set sample:22:30 --model sh_ctrl_lm --config fp16-adam --budget 24GiB \
  --batches 1302,1303 --out $OUT/capprobe2-$tag.jsonl 2>&1 | tail -2
python3 -m validate capprobe --set sample:22:30 --model sh_exaone4_lm --config fp16-adam --budget 24GiB \
  --batches 1436,1437 --out $OUT/capprobe2-$tag.jsonl 2>&1 | tail -2
