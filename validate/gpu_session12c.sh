#!/usr/bin/env bash
# Session 12's third GPU call: training data for session 13 (nothing here is blind).
#  - allocator traces of this session's blind misses (blind6-compare-h200-torch2.11.txt):
#    fasternet_t1 fp16 (-8.4%), xcit_tiny_12_p16 fp16 (+7.9%), and random modules of seeds
#    10 and 11 under by 8-26%;
#  - issue 20: DDP on one rank, bert_hf bf16 and fp16 in both bucket modes, three times
#    each, to see whether the buckets the first rebuild replaces are held run to run (a
#    race with the process group's watchdog, if the notes are right) or not.
#   bash validate/gpu_session12c.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-200}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs12c; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
( trace sample:12:30 s12 b1-fp16-adam st_fasternet_t1,st_xcit_tiny_12_p16_224
  trace random:10:120 r10 b2-fp32-adam rnd10_65,rnd10_11,rnd10_32,rnd10_36,rnd10_23 ) &
( trace random:11:80 r11 b1-fp16-adamw rnd11_33,rnd11_40,rnd11_7,rnd11_3 ) &
( for rep in 1 2 3; do
    python3 -m validate parallel --models bert_hf --configs b1-bf16-adamw,b1-fp16-adamw --modes ddp,ddp-view \
        --out /tmp/res/ddp-repeat.jsonl --deadline $dl --jobs 1 --logs $L/par$rep > $L/par$rep.log 2>&1
  done ) &
( sleep $((dl + 80 - $(date +%s))); pkill -f "validate (measure|parallel)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces18-$tag.jsonl
cp /tmp/res/ddp-repeat.jsonl $OUT/ddp-repeat-$tag.jsonl
tar -cJf $OUT/logs-session12c.tar.xz -C /tmp logs12c
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
