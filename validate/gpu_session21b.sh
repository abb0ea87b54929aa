#!/usr/bin/env bash
# Session 21's second GPU call (issue 18, training data): op-probe's allocator events for
# softmax under autocast (BoTNet's bf16 attention: two fp32 score-sized tensors in
# SoftmaxBackward0 where memest has one) and for group norm after poolformerv2's
# scale-and-add (two input-sized tensors per GroupNorm in fp32), the strides of every
# norm input of poolformerv2_s12; allocator traces (traces34) of GPT-2-like sequence
# classifiers 2% under (sample13 sh_gpt2_cls fp16, sample9 sh_openai-gpt_cls bf16) and
# sample20's sh_apertus_lm fp32 (-2.4%).
#   bash validate/gpu_session21b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs21b; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
python3 -m validate op-probe --timm poolformerv2_s12 --out /tmp/res/op-probe.jsonl > $L/op-probe.log 2>&1 &
trace sample:13:30 t1 b1-fp16-adam sh_gpt2_cls &
trace sample:9:30 t2 b1-bf16-adamw sh_openai-gpt_cls &
trace sample:20:30 t3 b2-fp32-adam sh_apertus_lm &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate (measure|op-probe)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cp /tmp/res/op-probe.jsonl $OUT/opprobe1-$tag.jsonl
cat /tmp/res/tr-*.jsonl > $OUT/traces34-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 12 "$f" | cut -c1-600; done
echo "total $(( $(date +%s) - t0 ))s"
