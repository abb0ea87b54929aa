#!/usr/bin/env bash
# Session 18's fourth GPU call: allocator traces (traces26) of blind13's misses, training
# data once blind13 was compared: sh_canine_cls b2-fp32-adam (-14.8% legacy; its largest
# batch under 24 GiB 120% over), st_convit_tiny b2-fp32-adam (-7.3%), rnd21_164 (-22.6%),
# rnd21_130 (-12.1%), rnd21_151 (-11.5%), rnd21_166 (+40.5%).
#   bash validate/gpu_session18c.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-150}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs18c; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace sample:19:30 s19a b2-fp32-adam sh_canine_cls &
trace sample:19:30 s19b b2-fp32-adam st_convit_tiny &
trace random:21:200 r21a b1-fp16-adam rnd21_164,rnd21_130 &
trace random:21:200 r21b b1-fp16-adam rnd21_151,rnd21_166 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces26-$tag.jsonl
tar -cJf $OUT/logs-session18c.tar.xz -C /tmp logs18c
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
