#!/usr/bin/env bash
# Session 19's second GPU call (issue 18), training data:
#  - cuDNN workspaces of dense 1x1 convolutions on channels-last inputs (convprobe family
#    pointwise-cl, seeds 37 to fit and 38 to check): ConvNeXt's conv_mlp blocks run their
#    1x1 layers so once GELU keeps the channel LayerNorm's layout, and memest gave them the
#    general envelope (convnext_atto +4.9 -> +11.6%, rnd14_5 -0.1 -> +15.4%);
#  - allocator traces (traces29) of those cases and of st_coat_lite_mini fp16, whose forward
#    memest now reads 4% under once q, k, v unbound from a permuted qkv keep their strides.
#   bash validate/gpu_session19b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs19b; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
python3 -m validate convprobe --family pointwise-cl --seed 37 --n 500 --deadline $dl \
    --out /tmp/res/cp-37.jsonl > $L/cp-37.log 2>&1 &
python3 -m validate convprobe --family pointwise-cl --seed 38 --n 500 --deadline $dl \
    --out /tmp/res/cp-38.jsonl > $L/cp-38.log 2>&1 &
trace sample:12:30 t1 b1-fp16-adam st_coat_lite_mini &
trace corpus t2 b1-fp16-adam convnext_atto &
trace sample:14:30 t3 b1-fp16-adam st_convnextv2_atto &
trace random:14:120 t4 b2-fp32-adam rnd14_5 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate (convprobe|measure)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/cp-37.jsonl /tmp/res/cp-38.jsonl | xz > $OUT/convprobe-pointwise-cl-$tag.jsonl.xz
cat /tmp/res/tr-*.jsonl | xz > $OUT/traces29-$tag.jsonl.xz
tar -cJf $OUT/logs-session19b.tar.xz -C /tmp logs19b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
