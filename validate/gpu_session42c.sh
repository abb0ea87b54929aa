set -u
budget=${1:-300} L=/tmp/logs42c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix
source validate/gpu_lib.sh
blind_architectures 45
finish
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample45-$tag.jsonl
cat /tmp/res/mb-*.jsonl > $OUT/sample45-maxbatch-$tag.jsonl
tar -cJf $OUT/matrix-blind38-sample.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session42c.tar.xz -C /tmp logs42c
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
