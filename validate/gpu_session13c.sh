#!/usr/bin/env bash
# Session 13's third GPU call, training data for the next session (issue 18): the two
# convolution classes whose workspaces no envelope bounds well, drawn at random with the
# CUDA kernels each backward call launched, so the engine behind each workspace has a name:
#  - dense 1x1 stride-1 2-D convolutions at 7x7 to 28x28 (fasternet's MLP: per-sample fp32
#    partials of 33.5 MB where the table's neighbour said 2.4 MB), seeds 11 and 12;
#  - dense 3-D convolutions with kernels of 3 to 7 (random sets' worst misses, -34% to -77%:
#    rnd5_20's 357.9 MB weight gradient), seeds 13 and 14.
#   bash validate/gpu_session13c.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-200}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs13c; mkdir -p $L /tmp/res
for spec in pointwise:11 pointwise:12 conv3d:13 conv3d:14; do
  fam=${spec%:*}; seed=${spec#*:}
  python3 -m validate convprobe --family $fam --seed $seed --n 400 --kernels --deadline $dl \
      --out /tmp/res/cp-$fam.jsonl > $L/cp-$fam-$seed.log 2>&1 &
done
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate convprobe" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
for fam in pointwise conv3d; do xz -c /tmp/res/cp-$fam.jsonl > $OUT/convprobe-$fam-$tag.jsonl.xz; done
tar -cJf $OUT/logs-session13c.tar.xz -C /tmp logs13c
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
for fam in pointwise conv3d; do echo "$fam: $(wc -l < /tmp/res/cp-$fam.jsonl) rows, $(grep -c '"status": "ok"' /tmp/res/cp-$fam.jsonl) ok, $(grep -c '_kernels": \["error' /tmp/res/cp-$fam.jsonl) profiler errors"; done
echo "total $(( $(date +%s) - t0 ))s"
