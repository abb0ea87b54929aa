#!/usr/bin/env bash
# Session 14's third GPU call (issue 18), training data:
#  - dense 1x1 convolutions with their backward kernels at the spatial sizes the
#    pointwise probes left out (validate convprobe --family pointwise-wide, seed 21 to fit,
#    seed 22 to check), for the weight-gradient engine rule in estimator/ops/conv.cc;
#  - allocator traces of misses that moved this session: nf_resnet26 b2-fp32-sgdm (forward
#    peak 90 MB over memest's), gernet_m fp16 and fastvit_s12 bf16 (1x1 weight-gradient
#    engine taken high), I-BERT and levit_conv_256 (sample seed 13).
#   bash validate/gpu_session14c.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-150}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs14c; mkdir -p $L /tmp/res
for seed in 21 22; do
  python3 -m validate convprobe --family pointwise-wide --seed $seed --n 400 --kernels --deadline $dl \
      --out /tmp/res/cp-wide-$seed.jsonl > $L/cp-wide-$seed.log 2>&1 &
done
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace corpus c b2-fp32-sgdm nf_resnet26 &
( trace sample:13:30 s13a b1-fp16-adam st_gernet_m,sh_ibert_cls,st_levit_conv_256
  trace sample:11:30 s11 b1-bf16-adamw st_fastvit_s12 ) &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate (convprobe|measure)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/cp-wide-21.jsonl /tmp/res/cp-wide-22.jsonl | xz -c > $OUT/convprobe-pointwise-wide-$tag.jsonl.xz
cat /tmp/res/tr-*.jsonl > $OUT/traces20-$tag.jsonl
tar -cJf $OUT/logs-session14c.tar.xz -C /tmp logs14c
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
for s in 21 22; do echo "seed $s: $(wc -l < /tmp/res/cp-wide-$s.jsonl) rows, $(grep -c '"status": "ok"' /tmp/res/cp-wide-$s.jsonl) ok"; done
echo "total $(( $(date +%s) - t0 ))s"
