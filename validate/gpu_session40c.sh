#!/usr/bin/env bash
# Session 40's third device call (issue 18): grouped and depthwise 3-D convolutions (not
# transposed), the class no probe held (blind36's rnd44_52: a groups-8 7x7x7 dilated
# layer's weight gradient took 66.2 MB where the 2-D grouped envelope gave 27.4 MB).
# Seed 97 to fit, 98 to check.
#   bash validate/gpu_session40c.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-200} L=/tmp/logs40c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
for s in 97 98; do
  python3 -m validate convprobe --family conv3d-grouped --seed $s --n 300 --kernels --deadline $dl \
      --out /tmp/res/cp-$s.jsonl > $L/cp-$s.log 2>&1 &
done
# And the exact layers behind blind36's 2-D/1-D underestimates (rnd44_48, rnd44_122,
# rnd44_153, rnd44_72) and neighbours one factor away, with each call's CUDA kernels, to
# name the engines whose workspaces the envelope's 10% tail leaves out.
( python3 - <<'E'
import json,os,torch,torch.nn.functional as F
from validate.convprobe import probe,_kernels
h='float16';T=True;N=False
C=[(2,N,16,128,96,[44,44],7,2,0,2,1,h,0,T),(2,N,16,128,96,[32,32],7,2,6,2,1,h,0,T),(2,N,16,128,96,[44,44],7,1,0,2,1,h,0,T),(2,N,16,128,96,[44,44],7,2,0,1,1,h,0,T),(2,N,8,128,96,[44,44],7,2,0,2,1,h,0,T),(2,N,32,128,96,[44,44],7,2,0,2,1,h,0,T),
(2,N,8,8,32,[196,196],3,1,0,1,1,h,0,T),(2,N,8,8,32,[194,194],3,1,1,1,1,h,0,T),(2,N,8,16,32,[196,196],3,1,0,1,1,h,0,T),(2,N,4,8,32,[196,196],3,1,0,1,1,h,0,T),(2,N,8,32,128,[198,198],5,2,0,1,1,h,0,N),
(2,N,16,48,32,[71,71],3,1,0,2,1,h,0,T),(2,N,16,48,32,[67,67],3,1,2,2,1,h,0,T),(2,N,16,32,48,[67,67],7,1,6,2,1,h,0,T),
(1,N,16,48,16,[1030],7,2,0,1,1,h,0,N),(1,N,16,48,16,[1024],7,2,3,1,1,h,0,N),(1,N,8,48,16,[1030],7,2,0,1,1,h,0,N)]
K="nd transposed n cin cout spatial k stride pad dil groups dtype opad bias".split()
o=open('/tmp/res/exact40.jsonl','w')
print(torch.__version__,torch.backends.cudnn.version(),torch.cuda.get_device_name())
for t in C:
  c=dict(zip(K,t))
  try:
    r=probe(torch,c,True)
    x=torch.randn([c['n'],c['cin']]+c['spatial'],device='cuda',dtype=torch.half);w=torch.randn([c['cout'],c['cin']]+[c['k']]*c['nd'],device='cuda',dtype=torch.half)
    f=[F.conv1d,F.conv2d][c['nd']-1]
    r['fwd_kernels']=_kernels(torch,lambda:f(x,w,None,c['stride'],c['pad'],c['dil']))
    del x,w
  except Exception as e: r={'err':str(e)[:300]}
  torch.cuda.empty_cache()
  r['cfg']=c;o.write(json.dumps(r)+'\n')
  print(t,'\n F',r.get('fwd'),'\n B',r.get('bwd'),'\n W',r.get('bwd_first'))
E
) > $L/exact.log 2>&1 &
finish
cat /tmp/res/cp-*.jsonl 2>/dev/null | xz > $OUT/convprobe-conv3d-grouped-$tag.jsonl.xz
xz < /tmp/res/exact40.jsonl > $OUT/convprobe-exact40-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "probes: $(cat /tmp/res/cp-*.jsonl 2>/dev/null | wc -l)"
echo "total $(( $(date +%s) - t0 ))s"
