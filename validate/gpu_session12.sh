#!/usr/bin/env bash
# Session 12's first GPU call (issues 18, 17, 19), measured now; the blind part is compared
# once at the end of the session, after its changes (nobody looks at it before):
#  - the end-of-session blind sample, part 1: 30 architectures drawn with seed 12 from timm
#    and transformers, excluding every name a set or an earlier draw holds (b1-fp16-adam and
#    b1-fp32-adamw), the largest batch under 24 GiB for ten of them, and 120 random modules
#    (seed 10, b2-fp32-adam), all exported through both exporters (random seed 11 follows in
#    the second call);
#  - training data (not blind): `validate sdpa-choice`, the backend torch picks for every
#    attention call of the corpus's, the fine-tuning set's and the random sets' transformers,
#    with the flash and memory-efficient kernels' reasons for refusing (T5's self-attention
#    runs the math backend, its cross-attention does not: traces11).
#   bash validate/gpu_session12.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-420}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs12; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
m --set random:10:120 --configs b2-fp32-adam --out /tmp/res/r10.jsonl > $L/m-r10.log 2>&1 &
python3 -m validate matrix --set random:10:120 --out /tmp/matrix --jobs 4 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r10.log 2>&1 &
attn_corpus=qwen2,mistral,gemma,phi,gpt_neox,falcon,opt,bloom,gpt_bigcode,stablelm,olmo,gptj,deberta_v2,electra,albert,xlm_roberta,mpnet,funnel,t5,bart,pegasus,marian,whisper,hf_vit,swinv2,beit,segformer,dinov2,wav2vec2,vit_small_patch16_224,deit_tiny_patch16_224,levit_128s,mobilevitv2_050,edgenext_small,coatnet_nano_rw_224,maxvit_nano_rw_256,efficientformer_l1,swin_tiny_patch4_window7_224,relpos_encdec
rnd_attn=$(python3 -c "
from validate import randnet
out = []
for s, n in [(1, 100), (2, 100), (3, 100), (4, 100), (5, 120), (6, 120), (7, 80), (8, 120), (9, 80)]:
    out += [e.name for e in randnet.entries(s, n) if e.family == 'rand_transformer']
print(','.join(out))")
( python3 -m validate sdpa-choice --set finetune --models t5_lora,bart_lora,llama_lora,qwen2_lora,bert_lora \
      --configs b1-fp32-adamw,b1-bf16-adamw --out /tmp/res/sc.jsonl --deadline $dl > $L/sc-ft.log 2>&1
  python3 -m validate sdpa-choice --set corpus --models $attn_corpus --configs b1-fp32-adam,b1-bf16-adamw \
      --out /tmp/res/sc.jsonl --deadline $dl > $L/sc-corpus.log 2>&1
  python3 -m validate sdpa-choice --set random:1:1 --models $rnd_attn --configs b1-fp32-adam,b1-fp16-adam \
      --out /tmp/res/sc.jsonl --deadline $dl > $L/sc-rnd.log 2>&1 ) &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(12, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '2,6p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '17,21p' | paste -sd,)
m --set sample:12:30 --models "$h1" --configs b1-fp16-adam,b1-fp32-adamw --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:12:30 --models "$h2" --configs b1-fp16-adam,b1-fp32-adamw --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2; do
  python3 -m validate maxbatch --set sample:12:30 --models "${!part}" --configs bf16-adamw --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:12:30 --models "$names" --out /tmp/matrix --jobs 4 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# Whatever still runs 100 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 100 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export|sdpa-choice)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample12-$tag.jsonl
cp /tmp/res/r10.jsonl $OUT/random10-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl > $OUT/sample12-maxbatch-$tag.jsonl
cp /tmp/res/sc.jsonl $OUT/sdpa-choice-$tag.jsonl
tar -cJf $OUT/matrix-blind6.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session12.tar.xz -C /tmp logs12
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
