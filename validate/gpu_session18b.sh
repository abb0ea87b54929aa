#!/usr/bin/env bash
# Session 18's second GPU call (issue 18):
#  - cuDNN workspaces of 1-D convolutions with long kernels (convprobe family conv1d-long,
#    seed 35 to fit, seed 36 to check): wav2letter's kernel-32 layers read 11-37% low, and
#    the general probes stopped at kernel 7;
#  - whether scaled_dot_product_attention keeps a mask its caller dropped (sdpa-probe
#    --mask-lifetime): blind12's rnd20_127 kept each layer's masked_fill'd bias to backward,
#    while keeping every mask memest's graphs show read the exact transformers high.
#   bash validate/gpu_session18b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs18b; mkdir -p $L /tmp/res
python3 -m validate convprobe --family conv1d-long --seed 35 --n 500 --deadline $dl \
    --out /tmp/res/cp-35.jsonl > $L/cp-35.log 2>&1 &
python3 -m validate convprobe --family conv1d-long --seed 36 --n 500 --deadline $dl \
    --out /tmp/res/cp-36.jsonl > $L/cp-36.log 2>&1 &
python3 -m validate sdpa-probe --mask-lifetime --out /tmp/res/sdpa-mask.jsonl > $L/sdpa-mask.log 2>&1 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate (convprobe|sdpa-probe)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/cp-35.jsonl /tmp/res/cp-36.jsonl | xz > $OUT/convprobe-conv1d-long-$tag.jsonl.xz
cp /tmp/res/sdpa-mask.jsonl $OUT/sdpa-mask-lifetime-$tag.jsonl
tar -cJf $OUT/logs-session18b.tar.xz -C /tmp logs18b
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
