#!/usr/bin/env bash
# Session 27's second device call (issue 18, largest batch): the whole allocation event
# sequences of blind22's two LM largest-batch misses near a 24 GiB cap, capped (as
# `validate maxbatch` runs them: set_per_process_memory_fraction) and uncapped.
# sh_gpt_bigcode_lm fp16-adam: the GPU ran 1365 and failed 1366-1408; memest's capped
# replay fits 1365 and 1408 but not 1366 or 1380 (sweep: 1529, +12%).
# (A first try, with uncapped traces after the capped ones, lost its machine; this one
# keeps to the capped traces, adding blind23's sh_granite_swa_lm, which the GPU could not
# run at 1281 and memest's replay fits.)
# sh_glm4_lm fp16-adam: the GPU ran 1412; memest's capped replay fails from 1300 on
# (sweep: 1285, -9%), its peak allocated within 0.2% of the GPU's. Replaying the capped
# GPU sequences through memest's allocator model (replay_requests) tells whether the cap
# model or the sequence is off. Training data, not blind.
#   bash validate/gpu_session27b.sh SECONDS
set -u
budget=${1:-400} L=/tmp/logs27b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace c1 sh_gpt_bigcode_lm/bs1408-fp16-adam,sh_gpt_bigcode_lm/bs1366-fp16-adam 24GiB &
seqtrace c2 sh_glm4_lm/bs1412-fp16-adam,sh_granite_swa_lm/bs1281-fp16-adam 24GiB &
finish
for p in c1 c2; do cat /tmp/res/seq-$p.jsonl; done > $OUT/seqcap27-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 4 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
