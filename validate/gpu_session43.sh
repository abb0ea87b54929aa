#!/usr/bin/env bash
# Session 43's first device call (issue 18): blind40 (sample seed 47, random seed 48),
# committed unread, compared once at the session start's binary. Beside it, GPU sequences
# of blind38's and blind39's architectures still off once the parameters their forward
# never runs are added: SAM 2's and MLCD's vision encoders under, SAM 3's lite text encoder
# -34%, MGP-STR -23% (83 MB its signature does not list), PP-OCRv5, NeoMMe, SAM bf16 over.
#   bash validate/gpu_session43.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs43
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix  # a warm machine keeps the last call's files
source validate/gpu_lib.sh
blind_sample 47 48
seqtrace o1 sh_sam2_vision_model_pix/b1-bf16-adamw,sh_sam3_lite_text_text_model_txt/b1-bf16-adamw,sh_mgp-str_pix/b1-bf16-adamw,sh_mlcd_vision_model_pix/b2-fp32-adam 60GiB &
seqtrace o2 sh_pp_ocrv5_mobile_rec_pix/b1-bf16-adamw,sh_neomme_txt/b1-bf16-adamw,sh_sam_vision_model_pix/b1-bf16-adamw 60GiB &
finish
collect_blind 47 48 40
cat /tmp/res/seq-o*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session43-$tag.jsonl.xz
tar -cJf $OUT/logs-session43.tar.xz -C /tmp logs43
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
