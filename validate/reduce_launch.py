"""The global buffer of a CUDA reduction, as estimator/reduce_kernel.cc computes it (a port,
for the probe analyses: Reduce.cuh's setReduceConfig on an H200, 132 SMs x 2048 threads).

A convolution's bias gradient is such a reduction (grad_output summed over every dim but
the channels), allocated after the weight's gradient; on a channels-last map its buffer
reaches 132 MiB, which the convolution probes' weight-gradient transients include.
"""


def _div_up(a, b):
    return (a + b - 1) // b


def _last_pow2(n):
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def buffer_bytes(outputs, inputs, reduces_innermost, one_reduce_dim=True, acc_bytes=4, input_vec=4, output_vec=4,
                 sms=132, threads_per_sm=2048):
    if outputs <= 0 or inputs <= 1:
        return 0
    ov = 1 if reduces_innermost else max(output_vec, 1)
    dim0 = inputs if reduces_innermost else outputs // ov
    dim1 = outputs if reduces_innermost else inputs
    if reduces_innermost and one_reduce_dim and dim0 >= 128:
        dim0 //= input_vec
    if dim0 < 1:
        return 0
    mt = 512 // ov
    p0 = _last_pow2(dim0) if dim0 < mt else mt
    p1 = _last_pow2(dim1) if dim1 < mt else mt
    bw = min(p0, 32)
    bh = min(p1, mt // bw)
    bw = min(p0, mt // bh)
    step_in = step_out = 1
    if reduces_innermost:
        step_in *= bw
    else:
        step_out *= bw
    split_y = _div_up(inputs, step_in) >= min(bh * 16, 256)
    if split_y:
        step_in *= bh
    else:
        step_out *= bh
    grid_x = _div_up(outputs // ov, step_out)
    target = sms * (threads_per_sm // (bw * bh))
    per_thread = _div_up(inputs, step_in)
    if not split_y or per_thread < 256 or grid_x > target:
        return 0
    ctas = max(min(_div_up(target, grid_x), _div_up(per_thread, 16)), _div_up(per_thread, 256))
    if ctas <= 1:
        return 0
    return acc_bytes * outputs * ctas * (1 if reduces_innermost else bw * ov)


def conv_bias_buffer(cfg, out_shape):
    """The bias gradient's buffer of a convolution probe (validate convprobe's cfg)."""
    if not cfg.get("bias"):
        return 0
    c = out_shape[1]
    positions = 1
    for i, s in enumerate(out_shape):
        if i != 1:
            positions *= s
    es = 4 if cfg["dtype"] == "float32" else 2
    # Channels innermost when the output is channels-last (2-D and 3-D; a 1-D convolution
    # runs on a contiguous copy). Contiguous: N and the spatial dims are two reduce runs.
    cl = cfg.get("channels_last") and cfg["nd"] >= 2 and positions // out_shape[0] > 1
    ov = 4
    while c % ov:
        ov //= 2
    if cl:
        return buffer_bytes(c, positions, False, output_vec=ov, input_vec=8 if es == 2 else 4)
    return buffer_bytes(c, positions, True, one_reduce_dim=out_shape[0] == 1, input_vec=8 if es == 2 else 4)
