#!/usr/bin/env bash
# Session 9's third GPU call (issues 20, 19, 18):
#  - data parallelism on one rank (validate/gpu_parallel.sh: DDP in both bucket modes and
#    FSDP2, world size 1, NCCL) -> parallel-h200-torch2.11.jsonl;
#  - export-meta again (the llama exports failed in the second call: the graph optimizer
#    folded meta tensors into unserializable constants) with parity models: the 1.1B Llama
#    of the fine-tuning set and torchvision's resnet50 (models/dynamo/resnet50.onnx), and a
#    70B Llama config for the speed check;
#  - the end-of-session blind sample: architectures drawn with a new seed (9) from timm and
#    transformers, excluding every name a set or an earlier draw holds, and random seed 5,
#    measured and exported through both exporters, compared once after the session's changes.
#   bash validate/gpu_session9c.sh SECONDS
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
budget=${1:-400}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs9c; mkdir -p $L /tmp/res /tmp/meta /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
mkdir -p /tmp/pout
( OUT=/tmp/pout bash validate/gpu_parallel.sh $((budget - 20)) ) > $L/parallel.log 2>&1 &
( set -x
  python3 -m validate export-meta hf:llama --set vocab_size=32000 --set hidden_size=2048 --set intermediate_size=5632 \
      --set num_hidden_layers=22 --set num_attention_heads=32 --set num_key_value_heads=4 \
      --set max_position_embeddings=2048 --set tie_word_embeddings=false --out /tmp/meta/llama1b_meta.onnx
  python3 -m validate export-meta tv:resnet50 --out /tmp/meta/resnet50_meta.onnx
  python3 -m validate export-meta hf:llama --set vocab_size=32000 --set hidden_size=8192 --set intermediate_size=28672 \
      --set num_hidden_layers=80 --set num_attention_heads=64 --set num_key_value_heads=8 \
      --set max_position_embeddings=32768 --set tie_word_embeddings=false --out /tmp/meta/llama70b_meta.onnx
) > $L/meta.log 2>&1 &
m --set random:5:60 --configs b1-fp16-adam --out /tmp/res/r5.jsonl > $L/m-r5.log 2>&1 &
python3 -m validate matrix --set random:5:60 --out /tmp/matrix --jobs 3 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r5.log 2>&1 &
# The blind maxbatch answers that ran out of memory (sh_granite_lm, sh_hyperclovax_lm at
# memest's batch): uncapped, at the largest batch that fitted, with the allocator's history.
m --set sample:8:36 --models sh_granite_lm,sh_hyperclovax_lm --configs bs1346-fp16-adam,bs1294-fp16-adam \
    --trace sh_granite_lm/bs1346-fp16-adam,sh_hyperclovax_lm/bs1294-fp16-adam --only-trace --trace-detail \
    --trace-out /tmp/res/tr-mb.jsonl > $L/tr-mb.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(9, 24)))" 2>$L/draw.log)
echo "drawn: $names"
m --set sample:9:24 --models "$names" --configs b1-fp32-adam,b1-bf16-adamw --out /tmp/res/s9.jsonl > $L/m-s9.log 2>&1 &
python3 -m validate matrix --set sample:9:24 --models "$names" --out /tmp/matrix --jobs 4 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-s9.log 2>&1 &
( sleep $((dl + 100 - $(date +%s))); pkill -f "validate (measure|matrix|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cp /tmp/pout/parallel-$tag.jsonl $OUT/ 2>/dev/null
cp /tmp/pout/logs-parallel.tar.xz $OUT/ 2>/dev/null
cat /tmp/res/s9.jsonl > $OUT/sample9-$tag.jsonl
cat /tmp/res/r5.jsonl > $OUT/random5-$tag.jsonl
cat /tmp/res/tr-mb.jsonl > $OUT/traces12-$tag.jsonl
tar -cJf $OUT/matrix-blind3.tar.xz -C /tmp/matrix .
tar -cJf $OUT/meta-models2.tar.xz -C /tmp/meta .
tar -cJf $OUT/logs-9c.tar.xz -C /tmp logs9c
grep -v "^\[torch.onnx\]\|External data\|Evaluation failed" $L/meta.log | grep -v "^ " | tail -12
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f"; done
ls -la /tmp/meta; echo "total $(( $(date +%s) - t0 ))s"
