#!/usr/bin/env bash
# Session 43's third device call, on the machine gpu_session43b.sh left warm: blind41's
# architectures that call's deadline left unexported (14) or unmeasured (8), the first
# draw with timm's models up to 300 M parameters being slower to export and measure.
#   bash validate/gpu_session43c.sh SECONDS
set -u
budget=${1:-220} L=/tmp/logs43c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix
source validate/gpu_lib.sh
unexported=st_tf_efficientnetv2_l,st_vit_base_r50_s16_384,st_levit_512,st_vgg16_bn,st_coatnet_rmlp_2_rw_384,st_deit3_base_patch16_224,st_maxvit_rmlp_small_rw_256,st_maxvit_large_tf_512,st_vit_pe_core_base_patch16_224,st_resnetrs101,st_maxvit_base_tf_384,st_swinv2_large_window12to24_192to384,st_hrnet_w44,st_swinv2_large_window12_192
unmeasured=st_coatnet_rmlp_2_rw_384,st_maxvit_rmlp_small_rw_256,st_swinv2_large_window12to24_192to384,st_maxvit_large_tf_512,st_hrnet_w44,st_vit_pe_core_base_patch16_224,st_swinv2_large_window12_192,st_maxvit_base_tf_384
h1=$(echo "$unmeasured" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$unmeasured" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
m --set sample:48:30 --models "$h1" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:48:30 --models "$h2" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
python3 -m validate matrix --set sample:48:30 --models "$unexported" --out /tmp/matrix --jobs 12 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
finish
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample48c-$tag.jsonl
tar -cJf $OUT/matrix-blind41c.tar.xz -C /tmp/matrix .
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
