#!/usr/bin/env bash
# Session 20's second GPU call: allocator traces (traces31) of blind16's misses, compared
# once already and now training data: st_cpubone_nano bf16 (-4.3%), st_hrnet_w18 bf16
# (+12.8%), random24's 1-D/2-D unders (rnd24_128, rnd24_119, rnd24_124, rnd24_68) and its
# worst over (rnd24_6).
#   bash validate/gpu_session20b.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-300}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs20b; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace sample:22:30 t1 b1-bf16-adamw st_cpubone_nano &
trace sample:22:30 t2 b1-bf16-adamw st_hrnet_w18 &
trace random:24:200 t3 b1-fp16-adam rnd24_128,rnd24_119 &
trace random:24:200 t4 b1-fp16-adam rnd24_124,rnd24_68,rnd24_6 &
( sleep $((dl + 90 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces31-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
