set -u
P() { python3 -m validate maxbatch --budget 24GiB --set $1 --models $2 --configs $3 --batches $4 --out $OUT/p_$2_$3.jsonl >> $OUT/probes.log 2>&1; }
P zoo gpt_mini fp16-adam 149,150,151
P zoo gpt_mini fp32-sgd 103,118
P zoo resnet50 fp16-adam 560
P zoo resnet50 fp32-sgd 291
P zoo vit_b_16 fp16-adam 343,346
P zoo bert_mini fp16-adam 1112,1148
P zoo bert_mini fp32-sgd 720,728
P zoo unet fp16-adam 236
P zoo unet fp32-sgd 123
P zoo gpt2_hf fp16-adam 126
P zoo bert_hf fp16-adam 458
P zoo bert_hf fp32-sgd 308
P blind resnet101 fp16-adam 381
P blind mobilenet_v3_large fp16-adam,fp32-sgd 561,1102
P blind roberta_hf fp16-adam 1360
cat $OUT/p_*.jsonl > $OUT/probes3.jsonl; rm -f $OUT/p_*.jsonl
