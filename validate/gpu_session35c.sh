#!/usr/bin/env bash
# Session 35's third device call: training data. st_seresnext26ts bf16 (blind31, +5.0% in
# both exports): its whole allocation sequence; st_resnet10t's largest batch under 24 GiB
# (GPU 3219, memest 2932: memest's capped allocator replay runs out where the GPU's did
# not): the sequence at 3219 under the cap, and capprobe's segments at 3219 and 3220.
#   bash validate/gpu_session35c.sh SECONDS
set -u
budget=${1:-200} L=/tmp/logs35c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 st_seresnext26ts/b1-bf16-adamw &
seqtrace t2 st_resnet10t/bs3219-fp16-adam 24GiB
python3 -m validate capprobe --set sample:38:30 --model st_resnet10t --config fp16-adam --budget 24GiB \
  --batches 3219,3220 --out /tmp/res/capprobe35c.jsonl > $L/cap.log 2>&1
finish
cat /tmp/res/seq-*.jsonl | xz -9 > $OUT/seqtrace35c-$tag.jsonl.xz
xz -9 < /tmp/res/capprobe35c.jsonl > $OUT/capprobe35c-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
