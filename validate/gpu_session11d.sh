#!/usr/bin/env bash
# Session 11's last GPU call, training data for the next session: allocator traces of the
# end-of-session blind sample's misses (compared once already; blind5-compare-h200-torch2.11.txt).
#   bash validate/gpu_session11d.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-150}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs11d; mkdir -p $L /tmp/res
trace() {  # SET OUTNAME CONFIG MODELS
  python3 -m validate measure --deadline $dl --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace random:8:120 r8 b1-fp16-adam rnd8_75,rnd8_80,rnd8_44,rnd8_111 &
trace random:9:80 r9 b2-bf16-adamw rnd9_52,rnd9_33,rnd9_67,rnd9_8,rnd9_17 &
trace sample:11:30 s11a b1-bf16-adamw st_fasternet_t2 &
trace sample:11:30 s11b b1-fp32-adam st_poolformerv2_s12 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces17-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
