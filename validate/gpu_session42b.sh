#!/usr/bin/env bash
# Session 42's closing device call (issue 18): blind39 (sample seed 46, random seed 47),
# committed unread, compared once at the session's last binary. Beside it, GPU sequences
# of blind38's architectures still off once the parameters their forward never runs are
# added (MLCD legacy -6/-7%, PP-OCRv5 -3.3%, NeoMMe, SAM's vision encoder bf16 +8%).
#   bash validate/gpu_session42b.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs42b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix  # a warm machine keeps the last call's files
source validate/gpu_lib.sh
blind_sample 46 47
seqtrace o1 sh_mlcd_vision_model_pix/b1-bf16-adamw,sh_mlcd_vision_model_pix/b2-fp32-adam,sh_pp_ocrv5_mobile_rec_pix/b1-bf16-adamw,sh_neomme_txt/b1-bf16-adamw,sh_sam_vision_model_pix/b1-bf16-adamw 60GiB &
finish
collect_blind 46 47 39
cat /tmp/res/seq-o*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session42b-$tag.jsonl.xz
tar -cJf $OUT/logs-session42b.tar.xz -C /tmp logs42b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
