#!/usr/bin/env bash
# Session 42's closing call, again (issue 18): blind39's 30 architectures, drawn by
# gpu_session42b.sh (sample seed 46) whose draw spent the deadline asking the hub for a
# timm config, measured for what time the session's device budget left, with the names
# given (the draw is not run again).
#   bash validate/gpu_session42d.sh SECONDS
set -u
budget=${1:-150} L=/tmp/logs42d
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix
source validate/gpu_lib.sh
names=sh_tipsv2_vision_model_pix,sh_radio_pix,sh_sam3_vit_model_pix,sh_qwen3_vl_txt,sh_qianfan_ocr_vision_pix,sh_aimv2_vision_model_pix,sh_tipsv2_text_model_txt,sh_deepseek_vl_txt,sh_sam2_vision_model_pix,sh_exaone4_5_txt,sh_llava_next_txt,sh_video_llama_3_txt,sh_muse_glimmer_txt,sh_pp_ocrv5_server_rec_pix,sh_sam3_lite_text_text_model_txt,sh_modernvbert_txt,sh_qwen3_5_txt,sh_chinese_clip_vision_model_pix,sh_clip_vision_model_pix,sh_lighton_ocr_txt,sh_kosmos-2.5_txt,sh_glm_ocr_text_txt,sh_fuyu_txt,sh_got_ocr2_txt,sh_git_txt,sh_internvl_txt,sh_cohere2_vision_txt,sh_deit_pix,sh_mlcd_pix,sh_mgp-str_pix
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
m --set sample:46:30 --models "$h1" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:46:30 --models "$h2" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
mb_part 46 "$names" 2,5 &
python3 -m validate matrix --set sample:46:30 --models "$names" --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
finish
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample46-$tag.jsonl
cat /tmp/res/mb-*.jsonl > $OUT/sample46-maxbatch-$tag.jsonl
tar -cJf $OUT/matrix-blind39-sample.tar.xz -C /tmp/matrix .
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
