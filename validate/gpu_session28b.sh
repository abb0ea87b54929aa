#!/usr/bin/env bash
# Session 28's second device call: does the draw's new task (transformers' image
# classifiers, `sh_<type>_img`) build, train and export? A throwaway seed (131, never a
# blind seed) draws 30; its image classifiers run one config and go through both
# exporters. Beside it, gpu_session27c's event sequences of sh_deepseek_v32_lm (its
# @torch.no_grad() indexer). Training data, not blind.
#   bash validate/gpu_session28b.sh SECONDS
set -u
budget=${1:-300} L=/tmp/logs28b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace d sh_deepseek_v32_lm/b1-bf16-adamw,sh_deepseek_v32_lm/b2-fp32-adam &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(131, 30)))" 2>$L/draw.log)
echo "drawn: $names"
img=$(echo "$names" | tr ',' '\n' | grep '_img$' | paste -sd,)
echo "image classifiers: $img"
m --set sample:131:30 --models "$img" --configs b1-bf16-adamw --out /tmp/res/img.jsonl > $L/m-img.log 2>&1 &
python3 -m validate matrix --set sample:131:30 --models "$img" --out /tmp/matrix --jobs 5 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-img.log 2>&1 &
finish
cp /tmp/res/seq-d.jsonl $OUT/seqtrace27c-$tag.jsonl
cp /tmp/res/img.jsonl $OUT/sample131img-$tag.jsonl
grep -h -E "ok|fail|error|Error" $L/m-img.log | tail -n 20
grep -h -v "^\[torch.onnx\]" $L/x-img.log | grep -E "ok|fail|rror" | tail -n 25
tail -n 3 $L/seq-d.log
echo "total $(( $(date +%s) - t0 ))s"
