"""python3 -m validate SUBCOMMAND ...  (or: python3 -m validate MODEL.pt --batch N ...)"""
import os
import sys

USAGE = """usage: python3 -m validate COMMAND [options]   (--help after a command for its options)

  export      export the zoo to shape-only ONNX (models/<name>.onnx) and rebuild models/README.md
  measure     run protocol.md's loop on the GPU; one JSON line per (model, config)
  checkpoint  the same with torch.utils.checkpoint around each repeated block
  maxbatch    largest batch that trains under a memory budget (binary search)
  capprobe    the allocator's segments and last events at given batches under a memory cap
  context     the CUDA context's reserve (total - free - reserved), in this fresh process
  kernels     scratch memory of single ops (cuDNN workspaces, reductions, attention) and whole-case traces
  export-meta a shape-only ONNX file from a config alone, built on the meta device (70B on a laptop)
  matrix      export a set through every exporter/mode/dynamic-shape variant (issue 17)
  convprobe   cuDNN convolution workspaces on a random grid of configurations
  reduceprobe temporaries of reductions (global pooling) on a random grid, channels-last or not
  matrix-check  unpack the committed export matrix; check every file loads with torch's parameter bytes
  families    accuracy per model family from compare --json files
  random      list the random models of a seed (validate/randnet.py; measure with --set random:SEED:N)
  parallel    protocol.md's loop under DDP (both bucket modes) and FSDP2, one rank per process (issue 20)
  compare     run memest on measured cases and report the error
  sdpa-probe  which backend scaled_dot_product_attention takes per configuration, and what it keeps
  norm-probe  what F.rms_norm keeps for backward per dtype, autocast and layout
  op-probe    the allocator's events of small snippets (softmax, group norm), forward and backward
  sdpa-choice which backend each attention call of real models takes, and the kernels' reasons
  MODEL.pt    measure a TorchScript file (and compare with memest if one is found)
"""


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "export":
        from validate import export
        return export.main(rest)
    if cmd == "capprobe":
        from validate import capprobe
        return capprobe.main(rest)
    if cmd == "op-probe":
        from validate import op_probe
        return op_probe.main(rest)
    if cmd == "norm-probe":
        from validate import norm_probe
        return norm_probe.main(rest)
    if cmd == "sdpa-choice":
        from validate import sdpa_choice
        return sdpa_choice.main(rest)
    if cmd == "sdpa-probe":
        from validate import sdpa_probe
        return sdpa_probe.main(rest)
    if cmd == "measure":
        from validate import measure
        return measure.main(rest)
    if cmd == "checkpoint":
        from validate import measure
        return measure.main(rest, checkpoint=True)
    if cmd == "_worker":
        from validate import measure
        return measure.worker_main(rest)
    if cmd == "maxbatch":
        from validate import maxbatch
        return maxbatch.main(rest)
    if cmd == "context":
        from validate import context
        return context.main(rest)
    if cmd == "kernels":
        from validate import kernels
        return kernels.main(rest)
    if cmd == "export-meta":
        from validate import export_meta
        return export_meta.main(rest)
    if cmd == "matrix":
        from validate import matrix
        return matrix.main(rest)
    if cmd == "convprobe":
        from validate import convprobe
        return convprobe.main(rest)
    if cmd == "reduceprobe":
        from validate import reduceprobe
        return reduceprobe.main(rest)
    if cmd == "matrix-check":
        from validate import matrix_check
        return matrix_check.main(rest)
    if cmd == "families":
        from validate import families
        return families.main(rest)
    if cmd == "random":
        from validate import randnet
        return randnet.main(rest)
    if cmd == "parallel":
        from validate import parallel
        return parallel.main(rest)
    if cmd == "compare":
        from validate import compare
        return compare.main(rest)
    if cmd.endswith((".pt", ".pth", ".ts", ".jit")) or os.path.isfile(cmd):
        from validate import user_model
        return user_model.main(argv)
    sys.stderr.write("validate: unknown command %r\n\n%s" % (cmd, USAGE))
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
