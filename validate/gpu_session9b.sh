#!/usr/bin/env bash
# Session 9's second GPU call (issues 19 and 18):
#  - export-meta (validate/export_meta.py): a 1.1B Llama config built on the meta device
#    (its estimate must equal that of the ordinary export models/finetune/llama1b.onnx),
#    a 70B Llama config, a timm and a torchvision model;
#  - the BERT fine-tuning cases again (their target was [B, T]; they failed) and their
#    graphs, plus the fine-tuning set's dynamo exports (cut short in the first call);
#  - the blind sample's three decoder classifiers again (no pad token; they failed);
#  - memory-history traces of the worst underestimates, for finding the mechanism.
#   bash validate/gpu_session9b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-400}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs; mkdir -p $L /tmp/res /tmp/meta /tmp/ft /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
( set -x
  python3 -m validate export-meta hf:llama --set vocab_size=32000 --set hidden_size=2048 --set intermediate_size=5632 \
      --set num_hidden_layers=22 --set num_attention_heads=32 --set num_key_value_heads=4 \
      --set max_position_embeddings=2048 --set tie_word_embeddings=false --out /tmp/meta/llama1b_meta.onnx
  python3 -m validate export-meta hf:llama --set vocab_size=32000 --set hidden_size=8192 --set intermediate_size=28672 \
      --set num_hidden_layers=80 --set num_attention_heads=64 --set num_key_value_heads=8 \
      --set max_position_embeddings=32768 --set tie_word_embeddings=false --out /tmp/meta/llama70b_meta.onnx
  python3 -m validate export-meta timm:vit_large_patch16_224 --out /tmp/meta/vit_large_meta.onnx
  python3 -m validate export-meta tv:resnet152 --out /tmp/meta/resnet152_meta.onnx
) > $L/meta.log 2>&1 &
m --set finetune --models bert_frz,bert_lora,bert_lora_cls --out /tmp/res/ft-bert.jsonl > $L/m-ft.log 2>&1 &
( python3 -m validate export --set finetune --models bert_frz,bert_lora --out /tmp/ft
  python3 -m validate export --set finetune --out /tmp/ft/dynamo --exporters dynamo \
      --models bert_frz,bert_lora,resnet50_fc,mobilenet_v2_cls,vit_b_16_head,llama_lora ) > $L/x-ft.log 2>&1 &
python3 -m validate export --set finetune --out /tmp/ft/dynamo --exporters dynamo \
    --models qwen2_lora,t5_lora,bart_lora,llama1b,llama1b_lora > $L/x-ft2.log 2>&1 &
cls=sh_nemotron_cls,sh_mixtral_cls,sh_deepseek_v3_cls
m --set sample:8:36 --models $cls --configs b1-fp32-adam,b1-bf16-adamw --out /tmp/res/s8cls.jsonl > $L/m-s8.log 2>&1 &
python3 -m validate matrix --set sample:8:36 --models $cls --out /tmp/matrix --jobs 2 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-s8.log 2>&1 &
( m --set sample:8:36 --models st_tf_mobilenetv3_small_minimal_100,st_resnetblur50d --configs b1-fp32-adam \
      --trace st_tf_mobilenetv3_small_minimal_100/b1-fp32-adam,st_resnetblur50d/b1-fp32-adam --only-trace \
      --trace-detail --trace-out /tmp/res/tr-sample.jsonl
  m --set finetune --models t5_lora --configs b1-bf16-adamw --trace t5_lora/b1-bf16-adamw --only-trace \
      --trace-detail --trace-out /tmp/res/tr-ft.jsonl
  m --set random:1:100 --models rnd1_46 --configs b1-fp32-adam --trace rnd1_46/b1-fp32-adam --only-trace \
      --trace-detail --trace-out /tmp/res/tr-rnd.jsonl ) > $L/tr.log 2>&1 &
( sleep $((dl + 120 - $(date +%s))); pkill -f "validate (measure|matrix|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/ft-bert.jsonl > $OUT/finetune2-$tag.jsonl
cat /tmp/res/s8cls.jsonl > $OUT/sample8-cls-$tag.jsonl
cat /tmp/res/tr-*.jsonl > $OUT/traces11-$tag.jsonl
tar -cJf $OUT/meta-models.tar.xz -C /tmp/meta .
tar -cJf $OUT/finetune2-models.tar.xz -C /tmp/ft .
tar -cJf $OUT/matrix-s8cls.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-9b.tar.xz -C /tmp logs
cat $L/meta.log | grep -v "^\[torch.onnx\]" | tail -20
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
ls -la /tmp/meta; echo "total $(( $(date +%s) - t0 ))s"
