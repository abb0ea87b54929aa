#!/usr/bin/env bash
# Session 14's fourth GPU call: allocator traces of the blind sample's misses, now
# training data (traces21): convnextv2_atto fp16 (+25.6%), arcee_cls fp16 (-5.1%), mra_cls
# fp16 (-3.4%), rnd14_95 (-37.4%), rnd15_27 (-35.3%).
#   bash validate/gpu_session14d.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-150}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs14d; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace sample:14:30 s14 b1-fp16-adam st_convnextv2_atto,sh_arcee_cls,sh_mra_cls &
trace random:14:120 r14 b2-fp32-adam rnd14_95 &
trace random:15:80 r15 b1-fp16-adamw rnd15_27 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces21-$tag.jsonl
tar -cJf $OUT/logs-session14d.tar.xz -C /tmp logs14d
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
