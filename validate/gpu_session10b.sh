#!/usr/bin/env bash
# Session 10's second GPU call, training data for the next session (nothing here is blind):
#  - which backend scaled_dot_product_attention takes per configuration (validate sdpa-probe;
#    T5's float position bias with dropout kept about twice what memest counts);
#  - random seed 7's 80 modules exported through both exporters (measured in the first
#    call, whose deadline passed before their export);
#  - allocator traces of the end-of-session blind sample's misses.
#   bash validate/gpu_session10b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-300}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs10b; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
python3 -m validate sdpa-probe --out /tmp/res/sdpa.jsonl > $L/sdpa.log 2>&1 &
python3 -m validate matrix --set random:7:80 --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r7.log 2>&1 &
tr6=rnd6_0,rnd6_33,rnd6_29,rnd6_88,rnd6_79
m --set random:6:120 --models $tr6 --configs b1-fp16-adam \
    --trace $(echo $tr6 | tr ',' '\n' | sed 's|$|/b1-fp16-adam|' | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-r6.jsonl > $L/tr-r6.log 2>&1 &
tr10=st_cpubone_s0,st_botnet50ts_256,st_tinynet_d
m --set sample:10:30 --models $tr10 --configs b1-bf16-adamw \
    --trace $(echo $tr10 | tr ',' '\n' | sed 's|$|/b1-bf16-adamw|' | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-s10.jsonl > $L/tr-s10.log 2>&1 &
( sleep $((dl + 80 - $(date +%s))); pkill -f "validate (measure|matrix|sdpa-probe)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cp /tmp/res/sdpa.jsonl $OUT/sdpa-probe-$tag.jsonl
cat /tmp/res/tr-r6.jsonl /tmp/res/tr-s10.jsonl > $OUT/traces14-$tag.jsonl
tar -cJf $OUT/matrix-blind4b.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session10b.tar.xz -C /tmp logs10b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
python3 - /tmp/res/sdpa.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["status"] == "ok":
        print(r["dtype"], "ac" if r["autocast"] else "--", r["mask"], r["dropout"], r["scale"], "gqa" if r["gqa"] else "",
              r["grad_fn"][0], r["kept_bytes"] // 2**20)
    else:
        print(r["dtype"], r["mask"], r["status"][:80])
PY
echo "total $(( $(date +%s) - t0 ))s"
