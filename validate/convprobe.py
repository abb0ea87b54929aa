"""`python3 -m validate convprobe --seed S --n N`: cuDNN workspaces on a random grid (issue 18).

The zoo's convolutions (validate kernels) are what memest's table holds; a user's are
anything. This draws convolutions at random: 1-D/2-D/3-D, transposed, any kernel,
stride, dilation, grouping (dense, grouped, depthwise), channels, spatial size, batch and
dtype, and records what cuDNN took beyond the outputs for the forward call and the two
backward calls (input gradient and weight gradient together, weight gradient alone),
as kernels.probe_conv does for 2-D. A seed draws a grid; the model of the workspace is
fitted on one seed and checked on another (disjoint) one.

`--family pointwise` draws only dense 1x1 stride-1 2-D convolutions at small spatial
sizes (where the weight gradient's engine, and so its workspace, changes from layer to
layer: per-sample fp32 partials, NHWC copies, or 64 partials); `--family conv3d` only
dense 3-D ones with kernels of 3 to 7 (whose weight gradients exceed the envelope most).
`--family conv3d-grouped` grouped and depthwise 3-D ones.
`--family grouped-small-map` draws grouped 2-D layers with wide weights on small maps.
`--family pointwise-cl` draws dense 1x1 stride-1 layers on channels-last inputs.
`--family channels-last` draws as `any` does (a third depthwise), the input in
channels-last strides; `--family depthwise` only depthwise layers, three in four
channels-last; `--family depthwise-cudnn` the contiguous fp16 depthwise layers PyTorch
sends to cuDNN; `--family conv3d-ofat` and `--family depthwise-cudnn-1d-ofat` vary one
factor at a time around drawn layers. `--kernels` also records the CUDA kernels each backward call launched (torch.profiler),
so the engine behind a workspace can be named.
"""
import argparse
import json
import random
import time

from validate.kernels import _events


def draw(r):
    nd = r.choices([1, 2, 3], [2, 5, 2])[0]
    transposed = r.random() < 0.2
    cin = r.choice([3, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024])
    cout = r.choice([8, 16, 32, 64, 96, 128, 256, 512, 1024])
    k = r.choice([1, 1, 2, 3, 3, 3, 4, 5, 7] if nd < 3 else [1, 3, 3, 5])
    stride = r.choice([1, 1, 1, 2, 2, 4]) if k > 1 else r.choice([1, 1, 2])
    dil = r.choice([1, 1, 1, 2, 3, 4]) if k > 1 and stride == 1 else 1
    gsel = r.random()
    groups = 1
    if gsel < 0.15 and not transposed:
        groups, cout = cin, cin * r.choice([1, 1, 2])
    elif gsel < 0.3:
        for g in (2, 4, 8, 32):
            if cin % g == 0 and cout % g == 0 and r.random() < 0.5:
                groups = g
    size = {1: r.choice([16, 64, 256, 1000, 4096, 16000]), 2: r.choice([7, 14, 17, 28, 32, 56, 64, 112, 128, 224]),
            3: r.choice([4, 8, 16, 28, 32, 56])}[nd]
    spatial = [size] * nd
    if nd == 3 and r.random() < 0.5:
        spatial[0] = r.choice([4, 8, 16])
    pad = (dil * (k - 1)) // 2 if r.random() < 0.7 else 0
    dtype = r.choice(["float32", "float16", "bfloat16"])
    per_sample = max(cin, cout) * max(1, _prod(spatial)) * (stride if transposed else 1) ** nd
    nmax = max(1, int(2 ** 27 // per_sample))
    n = min(nmax, r.choice([1, 2, 4, 8, 16, 32, 64, 128, 256]))
    opad = 1 if transposed and stride > 1 and r.random() < 0.5 else 0
    return {"nd": nd, "transposed": transposed, "n": n, "cin": cin, "cout": cout, "spatial": spatial, "k": k,
            "stride": stride, "pad": pad, "dil": dil, "groups": groups, "dtype": dtype, "opad": opad,
            "bias": r.random() < 0.5}


def draw_pointwise(r):
    cin = r.choice([32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 832, 864, 960, 1024, 1280, 2048])
    cout = r.choice([32, 64, 96, 128, 160, 192, 256, 320, 384, 512, 768, 1024, 2048])
    size = r.choice([7, 7, 8, 10, 14, 14, 16, 17, 28])
    n = r.choice([1, 2, 4, 8, 16, 32, 64, 128])
    return {"nd": 2, "transposed": False, "n": n, "cin": cin, "cout": cout, "spatial": [size, size], "k": 1,
            "stride": 1, "pad": 0, "dil": 1, "groups": 1, "dtype": r.choice(["float32", "float16", "bfloat16"]),
            "opad": 0, "bias": r.random() < 0.5}


def draw_pointwise_wide(r):
    """Dense 1x1 convolutions at the spatial sizes draw_pointwise leaves out: pooled and
    tiny maps (1-6) and early stages (32-112), the batch kept small where maps are large."""
    c = draw_pointwise(r)
    size = r.choice([1, 1, 2, 3, 4, 5, 6, 32, 35, 40, 48, 56, 56, 64, 80, 112])
    c["spatial"] = [size, size]
    if size >= 56:
        c["n"] = min(c["n"], 32)
    return c


def draw_conv3d(r):
    cin = r.choice([3, 8, 16, 24, 32, 48, 64, 96, 128, 256])
    cout = r.choice([8, 16, 32, 64, 96, 128, 256])
    k = r.choice([3, 5, 7])
    stride = r.choice([1, 1, 2])
    dil = r.choice([1, 1, 2, 3]) if stride == 1 else 1
    spatial = [r.choice([4, 8, 16]), r.choice([8, 16, 28, 32]), r.choice([8, 16, 28, 32])]
    pad = (dil * (k - 1)) // 2 if r.random() < 0.7 else 0
    if any(s + 2 * pad < dil * (k - 1) + 1 for s in spatial):
        pad = (dil * (k - 1)) // 2
    per_sample = max(cin, cout) * _prod(spatial)
    n = min(max(1, int(2 ** 26 // per_sample)), r.choice([1, 2, 4, 8, 16, 32]))
    return {"nd": 3, "transposed": False, "n": n, "cin": cin, "cout": cout, "spatial": spatial, "k": k,
            "stride": stride, "pad": pad, "dil": dil, "groups": 1, "dtype": r.choice(["float32", "float16", "bfloat16"]),
            "opad": 0, "bias": r.random() < 0.5}


def draw_pointwise_cl(r):
    """Dense 1x1 stride-1 2-D convolutions (draw_pointwise and draw_pointwise_wide's sizes)
    on channels-last inputs: ConvNeXt's conv_mlp blocks after a channel LayerNorm and GELU
    run their 1x1 layers so, and memest's contiguous pointwise rule does not apply."""
    c = draw_pointwise_wide(r) if r.random() < 0.5 else draw_pointwise(r)
    c["channels_last"] = True
    return c


def draw_channels_last(r):
    """Any convolution of `draw`, its input in channels-last strides, as a channel LayerNorm
    written with movedim (timm's LayerNorm2d, ConvNeXt's blocks) leaves it: PyTorch then
    suggests the channels-last format to cuDNN (Convolution.cpp), and sends a depthwise
    layer there too (use_cudnn_depthwise) instead of its own kernels. One in three is
    depthwise."""
    c = draw(r)
    if r.random() < 1 / 3 and not c["transposed"]:
        c["groups"] = c["cin"]
        c["cout"] = c["cin"] * r.choice([1, 1, 2])
    c["channels_last"] = True
    return c


def draw_depthwise(r):
    """Depthwise convolutions only (2-D mostly, some 1-D and 3-D), three in four with a
    channels-last input: which cuDNN engine takes them (--kernels) and what it needs."""
    nd = r.choices([1, 2, 3], [1, 7, 2])[0]
    cin = r.choice([8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024])
    k = r.choice([1, 2, 3, 3, 3, 5, 7] if nd < 3 else [1, 3, 3, 5])
    stride = r.choice([1, 1, 1, 2]) if k > 1 else 1
    dil = r.choice([1, 1, 1, 2, 3]) if k > 1 and stride == 1 else 1
    size = {1: r.choice([64, 256, 1000, 4096]), 2: r.choice([7, 14, 17, 28, 32, 56, 64, 112]),
            3: r.choice([4, 8, 16, 28])}[nd]
    spatial = [size] * nd
    pad = (dil * (k - 1)) // 2 if r.random() < 0.8 else 0
    cout = cin * r.choice([1, 1, 1, 2])
    per_sample = cout * _prod(spatial)
    n = min(max(1, int(2 ** 27 // per_sample)), r.choice([1, 2, 4, 8, 16, 32, 64, 128]))
    return {"nd": nd, "transposed": False, "n": n, "cin": cin, "cout": cout, "spatial": spatial, "k": k,
            "stride": stride, "pad": pad, "dil": dil, "groups": cin, "dtype": r.choice(["float32", "float16", "bfloat16"]),
            "opad": 0, "bias": r.random() < 0.5, "channels_last": r.random() < 0.75}


def draw_depthwise_cudnn(r):
    """Contiguous depthwise layers in fp16 that PyTorch sends to cuDNN instead of its own
    kernels (Convolution.cpp use_cudnn_depthwise, cuDNN 8.2 and later: float16, 32 channels
    or more, undilated, and check_cudnn_depthwise_workload_with_filter: 1-D at stride 1
    whatever the kernel, 2-D with a square 1, 3 or 5 kernel at stride 1, or 2 on some
    shapes, maps 7 wide or more). blind18's rnd26_27 (1-D, kernel 7, 48 channels) took 4.3 x
    its input in the weight gradient; memest took PyTorch's kernels (none)."""
    nd = r.choice([1, 2])
    cin = r.choice([32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024])
    if nd == 1:
        k, stride = r.choice([2, 3, 4, 5, 7, 9, 11, 15, 31]), 1
        size = r.choice([64, 256, 1000, 2048, 4096, 16000])
    else:
        k, stride = r.choice([1, 3, 5]), r.choice([1, 1, 2])
        size = r.choice([7, 14, 17, 28, 32, 56, 64, 112])
    pad = (k - 1) // 2 if r.random() < 0.8 else 0
    cout = cin * r.choice([1, 1, 1, 2])
    per_sample = cout * size ** nd
    n = min(max(1, int(2 ** 27 // per_sample)), r.choice([1, 2, 4, 8, 16, 32, 64, 128]))
    return {"nd": nd, "transposed": False, "n": n, "cin": cin, "cout": cout, "spatial": [size] * nd, "k": k,
            "stride": stride, "pad": pad, "dil": 1, "groups": cin, "dtype": "float16", "opad": 0,
            "bias": r.random() < 0.5, "channels_last": False}


def _one_factor_at_a_time(r, base, factors):
    """The next of a queue of variants of one drawn layer, each changing one factor (a key
    of `base` to each of its values) and nothing else: a rule of the workspace in one
    factor shows as a curve, which random grids scatter. `base(r)` draws the layer."""
    queue = getattr(r, "_ofat_queue", None)
    if not queue:
        b = base(r)
        queue = [dict(b)]
        for key, values in factors(r, b).items():
            queue += [dict(b, **{key: v}) for v in values if v != b[key]]
        r._ofat_queue = queue
    return queue.pop(0)


def draw_conv3d_ofat(r):
    """Dense 3-D convolutions, one factor at a time around a drawn layer (batch, input and
    output channels, spatial size): how cuDNN's split-K weight-gradient workspace (tens to
    hundreds of fp32 weight copies, estimator/data/cudnn_model_3d_h200.inc) follows each."""
    def factors(r, b):
        per_sample = lambda c: max(c["cin"], c["cout"]) * _prod(c["spatial"])
        cap = lambda c: max(1, int(2 ** 26 // per_sample(c)))
        out = {"n": [n for n in (1, 2, 4, 8, 16, 32) if n <= cap(b)],
               "cin": [c for c in (8, 32, 128) if c * _prod(b["spatial"]) * b["n"] <= 2 ** 26],
               "cout": [c for c in (16, 64, 256) if c * _prod(b["spatial"]) * b["n"] <= 2 ** 26]}
        out["spatial"] = [s for s in ([4, 8, 8], [8, 16, 16], [16, 32, 32]) if max(b["cin"], b["cout"]) * _prod(s) * b["n"] <= 2 ** 26]
        return out
    return _one_factor_at_a_time(r, draw_conv3d, factors)


def draw_depthwise_cudnn_1d_ofat(r):
    """Contiguous fp16 1-D depthwise layers PyTorch sends to cuDNN, one factor at a time
    (batch, channels, length, kernel): blind18's rnd26_27 and four traced layers took 2 to
    11 x their input in the weight gradient, the random probes mostly none."""
    def base(r):
        c = draw_depthwise_cudnn(r)
        while c["nd"] != 1:
            c = draw_depthwise_cudnn(r)
        return c
    def factors(r, b):
        fits = lambda n, ch, size: n * ch * size <= 2 ** 27
        return {"n": [n for n in (1, 4, 16, 64) if fits(n, b["cout"], b["spatial"][0])],
                "cin": [c for c in (32, 128, 512) if fits(b["n"], c * b["cout"] // b["cin"], b["spatial"][0])],
                "spatial": [[s] for s in (256, 2048, 16000) if fits(b["n"], b["cout"], s) and s >= b["k"]],
                "k": [2, 4, 7, 15]}
    c = _one_factor_at_a_time(r, base, factors)
    if c["groups"] != c["cin"]:  # a depthwise layer's output channels follow its input's
        mult = c["cout"] // c["groups"]
        c = dict(c, groups=c["cin"], cout=c["cin"] * mult)
    c["pad"] = min(c["pad"], (c["k"] - 1) // 2)
    return c


def draw_tconv3d(r):
    """Transposed 3-D convolutions (dense and grouped, strided and dilated): the one class of
    3-D layer the weight-gradient bound (estimator/data/cudnn_model_3d_h200.inc) leaves out."""
    c = draw_conv3d(r)
    c["transposed"] = True
    c["dil"] = r.choice([1, 1, 2, 3])
    if r.random() < 0.3:
        for g in (2, 4, 8):
            if c["cin"] % g == 0 and c["cout"] % g == 0 and r.random() < 0.5:
                c["groups"] = g
    c["pad"] = r.choice([0, (c["dil"] * (c["k"] - 1)) // 2])
    c["opad"] = 1 if c["stride"] > 1 and r.random() < 0.5 else 0
    c["spatial"] = [max(2, s // c["stride"]) for s in c["spatial"]]
    return c


def draw_dilated(r):
    """Dilated 1-D and 2-D convolutions (dense and grouped, half precision mostly), whose
    weight gradients took workspaces the 2-D envelope left out (rnd18_81, rnd20_81)."""
    c = draw(r)
    while c["transposed"] or c["k"] < 2 or c["nd"] == 3:
        c = draw(r)
    c["stride"] = 1
    c["dil"] = r.choice([2, 3, 4, 6])
    c["pad"] = (c["dil"] * (c["k"] - 1)) // 2 if r.random() < 0.8 else 0
    c["dtype"] = r.choice(["float16", "float16", "bfloat16", "float32"])
    return c


def draw_strided_dilated(r):
    """Convolutions both strided and dilated (1-D, 2-D and some 3-D; dense and grouped; any
    precision), which `draw` never combines: blind31's rnd39_142 (a 7x7 stride-2
    dilation-2 2-D layer) took 26.6 MB in its weight gradient where the envelope said 14.6."""
    nd = r.choices([1, 2, 3], [3, 5, 2])[0]
    c = draw(r)
    while c["transposed"] or c["nd"] != nd or c["groups"] == c["cin"]:
        c = draw(r)
    c["k"] = r.choice([2, 3, 3, 5, 7] if nd < 3 else [3, 3, 5, 7])
    c["stride"] = r.choice([2, 2, 3, 4])
    c["dil"] = r.choice([2, 2, 3, 4])
    reach = c["dil"] * (c["k"] - 1) + 1
    c["pad"] = (c["dil"] * (c["k"] - 1)) // 2 if r.random() < 0.7 else 0
    c["spatial"] = [max(s, reach) for s in c["spatial"]]
    per_sample = max(c["cin"], c["cout"]) * _prod(c["spatial"])
    c["n"] = min(c["n"], max(1, int(2 ** 27 // per_sample)))
    return c


def draw_conv1d_long(r):
    """1-D convolutions with long kernels (8 to 128 taps), dense and grouped: wav2letter's
    kernel-32 layers (-11% to -37%) and wav2vec2's positional convolution (kernel 128, 16
    groups) are past the kernels the general probes reached (7)."""
    cin = r.choice([32, 64, 128, 250, 256, 512, 768, 1024])
    cout = r.choice([32, 64, 128, 256, 512, 768, 1024, 2000])
    k = r.choice([8, 10, 11, 16, 25, 32, 48, 64, 80, 128])
    stride = r.choice([1, 1, 1, 2, 4, 5])
    dil = r.choice([1, 1, 1, 2]) if stride == 1 else 1
    groups = 1
    if r.random() < 0.35:
        for g in (16, 8, 4, 2):
            if cin % g == 0 and cout % g == 0 and r.random() < 0.6:
                groups = g
                break
    size = r.choice([50, 128, 250, 500, 1000, 1600, 4000, 16000])
    size = max(size, dil * (k - 1) + 1)
    pad = (dil * (k - 1)) // 2 if r.random() < 0.6 else 0
    per_sample = max(cin, cout) * size
    n = min(max(1, int(2 ** 27 // per_sample)), r.choice([1, 2, 4, 8, 16, 32, 64]))
    return {"nd": 1, "transposed": False, "n": n, "cin": cin, "cout": cout, "spatial": [size], "k": k,
            "stride": stride, "pad": pad, "dil": dil, "groups": groups,
            "dtype": r.choice(["float32", "float16", "bfloat16"]), "opad": 0, "bias": r.random() < 0.5}


def draw_depthwise_cl_large(r):
    """Depthwise 2-D layers with 5x5 and 7x7 kernels on channels-last inputs (ConvNeXt's
    conv_dw after its channel LayerNorm), fp32 and half, at ConvNeXt's widths and maps:
    blind27's st_test_convnext2 took 16.8 x (x + y) in one such weight gradient (fp32, 64
    channels, 20x20, batch 32), past every channels-last depthwise probe (at most 8.5 x
    for fp32 7x7 layers, 14 probes)."""
    cin = r.choice([32, 40, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024])
    k = r.choice([5, 7, 7])
    size = r.choice([5, 7, 10, 14, 20, 28, 40, 56, 80, 112])
    per_sample = cin * size * size
    n = min(max(1, int(2 ** 26 // per_sample)), r.choice([1, 2, 4, 8, 16, 32, 64, 128]))
    return {"nd": 2, "transposed": False, "n": n, "cin": cin, "cout": cin, "spatial": [size, size], "k": k,
            "stride": 1, "pad": (k - 1) // 2, "dil": 1, "groups": cin,
            "dtype": r.choice(["float32", "float32", "float16", "bfloat16"]), "opad": 0,
            "bias": r.random() < 0.8, "channels_last": True}


_TABLE = []


def draw_table(r):
    """A row of memest's cuDNN table (estimator/data/cudnn_h200.inc: the zoo's layers,
    probed on the H200) with square kernels, strides and pads, at a batch it was probed at
    or below: on another card (an H100), whether cuDNN's heuristics pick what they picked
    there. blind27's st_mnasnet_100 (H100): its 1152 -> 320 1x1 layer's bf16 weight
    gradient took 26 MB where the table's row says 94 MB at every batch."""
    import os
    import re
    if not _TABLE:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "estimator", "data", "cudnn_h200.inc")
        dtypes = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
        for line in open(path):
            m = re.match(r"\{(\d+),(\d+),DType::(\w+),([\d,]+)\},", line)
            if not m:
                continue
            v = [int(x) for x in m.group(4).split(",")]
            cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups, oph, opw, n = v[:16]
            if kh != kw or sh != sw or ph != pw or dh != dw or oph != opw or h != w:
                continue
            _TABLE.append({"nd": 2, "transposed": bool(int(m.group(1))), "n": n, "cin": cin, "cout": cout,
                           "spatial": [h, w], "k": kh, "stride": sh, "pad": ph, "dil": dh, "groups": groups,
                           "dtype": dtypes[m.group(3)], "opad": oph, "bias": False,
                           "channels_last": bool(int(m.group(2)))})
    c = dict(r.choice(_TABLE))
    c["n"] = r.choice([b for b in (1, 8, 16, 32, 64) if b <= c["n"]] or [c["n"]])
    return c


def draw_pointwise_leaf(r):
    """Dense 1x1 stride-1 2-D layers where memest's weight-gradient rule is least sure
    (estimator/ops/conv.cc pointwise_wgrad): fp32 partials Cin x Cout x 4 B a sample larger
    than twice the input and output, 8 MiB or more in all, at N x H x W up to 3,200, where
    the rule takes the per-sample GEMM's partials although the seed 11/12 probes went to it
    in 41% (blind26's lcnetv2, mnasnet, mobilenetv3, hgnet, xception41p: +4% to +6.6%,
    the peak at such a layer's weight gradient). Drawn until one lands there."""
    es = {"float32": 4, "float16": 2, "bfloat16": 2}
    while True:
        c = draw_pointwise_wide(r) if r.random() < 0.3 else draw_pointwise(r)
        h, w = c["spatial"]
        partials = c["cin"] * c["cout"] * 4
        copies = h * w * (c["cin"] + c["cout"]) * es[c["dtype"]]
        if h > 1 and partials > 2 * copies and c["n"] * partials > 8 << 20 and c["n"] * h * w <= 3200:
            return c


def draw_grouped_small_map(r):
    """Grouped (not depthwise) 2-D layers with wide weights on small maps (4x4 to 16x16),
    which `draw` rarely makes: CPUBone's grouped 2x2 layer (224 -> 896 on a 7x7 map) took a
    44.4 MB weight-gradient workspace, 23.8 x (x + y), where the grouped envelope gives
    7.5 MB (seqtrace33 st_cpubone_s0)."""
    cin = r.choice([64, 96, 128, 192, 224, 256, 384, 448, 512, 768, 1024])
    groups = r.choice([2, 2, 4, 8, 16, 32])
    while cin % groups:
        groups //= 2
    cout = groups * max(1, (cin * r.choice([1, 2, 4])) // groups)
    k = r.choice([1, 2, 2, 3, 3, 5])
    stride = r.choice([1, 1, 2]) if k > 1 else 1
    size = r.choice([4, 7, 8, 12, 14, 16])
    dtype = r.choice(["float16", "bfloat16", "bfloat16", "float32"])
    n = r.choice([1, 2, 4, 8, 16, 32, 64, 128, 256])
    return {"nd": 2, "transposed": False, "n": n, "cin": cin, "cout": cout, "spatial": [size, size], "k": k,
            "stride": stride, "pad": (k - 1) // 2 if r.random() < 0.7 else 0, "dil": 1, "groups": groups,
            "dtype": dtype, "opad": 0, "bias": r.random() < 0.5}


def draw_tconv_depthwise(r):
    """Transposed 1-D and 2-D convolutions with one input channel per group, which PyTorch
    does not take for depthwise (Convolution.cpp is_depthwise requires !transposed): cuDNN
    runs them as grouped layers (rnd40_87's 3x3: a 7.25 MB weight-gradient workspace, 4.9 x
    (x + y)). Which of their calls take workspaces, and how much, for the envelope's class."""
    nd = r.choice([1, 2, 2, 2])
    cin = r.choice([4, 8, 16, 32, 64, 128, 256])
    mult = r.choice([1, 1, 2, 4, 16])
    k = r.choice([2, 3, 3, 4, 5, 7])
    stride = r.choice([1, 2, 2, 3])
    dil = r.choice([1, 1, 2, 3])
    size = r.choice([8, 16, 32, 48, 64]) if nd == 2 else r.choice([64, 256, 1024, 4096])
    n = r.choice([1, 2, 4, 8, 16, 32, 64])
    out = ((size - 1) * stride + dil * (k - 1) + 2) ** nd
    while n > 1 and n * cin * mult * out > 4e8:  # keep a probe's tensors under a few GB
        n //= 2
    return {"nd": nd, "transposed": True, "n": n, "cin": cin, "cout": cin * mult, "spatial": [size] * nd, "k": k,
            "stride": stride, "pad": r.choice([0, (dil * (k - 1)) // 2]), "dil": dil, "groups": cin,
            "dtype": r.choice(["float16", "float16", "bfloat16", "float32"]),
            "opad": 1 if stride > 1 and r.random() < 0.4 else 0, "bias": r.random() < 0.5}


def draw_conv3d_grouped(r):
    """Grouped and depthwise 3-D convolutions (not transposed), strided and dilated: the
    class the 3-D probes (dense) and tconv3d (transposed) left out. PyTorch's depthwise
    path is 2-D only (Convolution.cpp ConvParams::is_depthwise needs a 4-D input), so cuDNN
    runs all of them (blind36's rnd44_52: a groups-8 7x7x7 dilated layer took 66.2 MB in its
    weight gradient where the 2-D grouped envelope gave 27.4 MB)."""
    c = draw_conv3d(r)
    cin = r.choice([4, 8, 16, 24, 32, 48, 64, 96, 128])
    if r.random() < 0.3:  # depthwise: one input channel per group
        groups, cout = cin, cin * r.choice([1, 1, 2])
    else:
        groups = r.choice([g for g in (2, 4, 8, 16, 32) if cin % g == 0 and g < cin])
        cout = groups * r.choice([1, 2, 4, 8])
    c.update(cin=cin, cout=cout, groups=groups, dtype=r.choice(["float16", "float16", "bfloat16", "float32"]))
    per_sample = max(cin, cout) * _prod(c["spatial"])
    c["n"] = min(max(1, int(2 ** 26 // per_sample)), r.choice([1, 2, 4, 8, 16, 32]))
    return c


FAMILIES = {"any": draw, "grouped-small-map": draw_grouped_small_map, "strided-dilated": draw_strided_dilated, "table": draw_table, "pointwise-leaf": draw_pointwise_leaf, "depthwise-cl-large": draw_depthwise_cl_large, "pointwise": draw_pointwise, "pointwise-wide": draw_pointwise_wide, "conv3d": draw_conv3d,
            "pointwise-cl": draw_pointwise_cl,
            "channels-last": draw_channels_last, "depthwise": draw_depthwise, "depthwise-cudnn": draw_depthwise_cudnn,
            "conv3d-ofat": draw_conv3d_ofat, "depthwise-cudnn-1d-ofat": draw_depthwise_cudnn_1d_ofat,
            "tconv3d": draw_tconv3d, "conv3d-grouped": draw_conv3d_grouped, "dilated": draw_dilated,
            "conv1d-long": draw_conv1d_long, "tconv-depthwise": draw_tconv_depthwise}


def _kernels(torch, fn):
    """Names of the CUDA kernels fn launches, in order, each once."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = []
    for e in prof.events():
        if "CUDA" in str(getattr(e, "device_type", "")) and e.name not in names:
            names.append(e.name)
    return names


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def probe(torch, c, kernels=False):
    import torch.nn.functional as F
    nd = c["nd"]
    dt = getattr(torch, c["dtype"])
    x = torch.randn([c["n"], c["cin"]] + c["spatial"], device="cuda", dtype=dt)
    if c.get("channels_last"):
        x = x.movedim(1, -1).contiguous().movedim(-1, 1)
    k = [c["k"]] * nd
    if c["transposed"]:
        wt = torch.randn([c["cin"], c["cout"] // c["groups"]] + k, device="cuda", dtype=dt)
    else:
        wt = torch.randn([c["cout"], c["cin"] // c["groups"]] + k, device="cuda", dtype=dt)
    b = torch.randn(c["cout"], device="cuda", dtype=dt) if c["bias"] else None
    stride, pad, dil, opad = [c["stride"]] * nd, [c["pad"]] * nd, [c["dil"]] * nd, [c["opad"]] * nd
    if c["transposed"]:
        fn = [F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][nd - 1]
        fwd = lambda: fn(x, wt, b, stride, pad, opad, c["groups"], dil)
    else:
        fn = [F.conv1d, F.conv2d, F.conv3d][nd - 1]
        fwd = lambda: fn(x, wt, b, stride, pad, dil, c["groups"])
    rows = {"fwd": _events(torch, fwd)}
    y = fwd()
    rows["out_shape"] = list(y.shape)
    rows["out_strides"] = list(y.stride())
    gy = torch.randn_like(y)
    del y
    for name, mask in (("bwd", [True, True, c["bias"]]), ("bwd_first", [False, True, c["bias"]])):
        call = lambda: torch.ops.aten.convolution_backward(
            gy, x, wt, [c["cout"]] if c["bias"] else None, stride, pad, dil, c["transposed"], opad, c["groups"], mask)
        rows[name] = _events(torch, call)
        if kernels:
            try:
                rows[name + "_kernels"] = _kernels(torch, call)
            except Exception as exc:  # the profiler is evidence, not the probe
                rows[name + "_kernels"] = ["error: %s" % type(exc).__name__]
    return rows


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate convprobe")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--out", required=True)
    p.add_argument("--deadline", type=float, default=0)
    p.add_argument("--family", choices=sorted(FAMILIES), default="any")
    p.add_argument("--kernels", action="store_true", help="record each backward call's CUDA kernels")
    args = p.parse_args(argv)
    import torch
    r = random.Random(args.seed)
    meta = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name(),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark), "seed": args.seed}
    with open(args.out, "a") as f:
        for i in range(args.n):
            if args.deadline and time.time() > args.deadline:
                break
            c = FAMILIES[args.family](r)
            row = {"seed": args.seed, "i": i, "family": args.family, "cfg": c, "versions": meta}
            try:
                row.update(probe(torch, c, args.kernels))
                row["status"] = "ok"
            except Exception as exc:
                row["status"] = "error: %s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0][:200])
            torch.cuda.empty_cache()
            f.write(json.dumps(row) + "\n")
            f.flush()
    return 0
