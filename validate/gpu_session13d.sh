#!/usr/bin/env bash
# Session 13's fourth GPU call: allocator traces of the blind sample's misses
# (blind7-compare-h200-torch2.11.txt), training data now that it was compared once:
# I-BERT (-11.2% legacy; its largest batch +19% over), levit_conv_256 (-4.2%),
# eca_nfnet_l2, mobilenetv1_100h and lowformer_e1 fp16 (+13.4%, +7.5%, +8.4%), and random
# modules of seeds 12 and 13 under by 8-49%.
#   bash validate/gpu_session13d.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-150}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs13d; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace sample:13:30 s13 b1-fp16-adam sh_ibert_cls,st_levit_conv_256,st_eca_nfnet_l2,st_mobilenetv1_100h,st_lowformer_e1 &
trace random:12:120 r12 b2-fp32-adam rnd12_31,rnd12_78,rnd12_2,rnd12_97 &
trace random:13:80 r13 b1-fp16-adamw rnd13_76,rnd13_46,rnd13_25 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces19-$tag.jsonl
tar -cJf $OUT/logs-session13d.tar.xz -C /tmp logs13d
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
