"""The public model zoo: what is exported to models/ and measured on the GPU.

Each entry says how to build the model (random init, nothing downloaded), what one
sample looks like, which loss protocol.md applies, two batch sizes, how to export
it, and which extra memest arguments reproduce a case. torch is imported lazily so
that `validate compare` runs without it.
"""
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple, Union

Dim = Union[int, str]  # a number, or the name of a symbolic dimension (see Entry.dims)


@dataclass
class InputSpec:
    name: str
    shape: Tuple[Dim, ...]  # per sample, without the batch
    dtype: str = "float32"  # float32 | int64
    high: int = 0  # exclusive upper bound of random int64 values


@dataclass
class TargetSpec:
    shape: Tuple[Dim, ...]  # per sample, without the batch
    high: int  # number of classes


@dataclass
class Entry:
    name: str
    build: Callable[[], object]
    inputs: List[InputSpec]
    loss: str  # ce | mse | sum
    target: Optional[TargetSpec]  # for ce; mse targets follow the output, sum has none
    batches: Tuple[int, int]  # (B1 moderate, B2 bigger)
    source: str
    dims: Dict[str, int] = field(default_factory=dict)  # symbolic dims other than batch
    output_axes: Dict[int, str] = field(default_factory=lambda: {0: "batch"})
    export: str = "legacy"  # preferred exporter; legacy falls back to dynamo on failure
    needs: Optional[str] = None  # a package needed beyond torch/torchvision
    family: str = ""
    notes: str = ""
    subdir: str = ""  # under models/: "" for the zoo, "holdout" for the hold-out set
    exporters: Optional[Tuple[str, ...]] = None  # only these exporters (None: legacy, then dynamo)
    # fine-tuning (validate/finetune.py): protocol.md's --train / --freeze / --grad-accum
    train: Tuple[str, ...] = ()
    freeze: Tuple[str, ...] = ()
    accum: int = 1
    graph: str = ""  # the model whose ONNX file this entry shares ("": its own name)
    configs: Optional[Tuple[str, ...]] = None  # the cases measured by default (None: CONFIGS)
    export_dims: Dict[str, int] = field(default_factory=dict)  # symbolic dims for the export's example only

    def sample_shape(self, spec_shape):
        return tuple(self.dims[d] if isinstance(d, str) else d for d in spec_shape)

    def memest_extra(self) -> List[str]:
        """Arguments beyond batch/optimizer/amp: the loss and fixed symbolic dims."""
        args = ["--loss", self.loss]
        for k, v in self.dims.items():
            args += ["--dim", "%s=%d" % (k, v)]
        return args

    def finetune_args(self) -> List[str]:
        """--train / --freeze / --grad-accum, as the loop applies them (empty for the zoo)."""
        args = []
        for p in self.train:
            args += ["--train", p]
        for p in self.freeze:
            args += ["--freeze", p]
        if self.accum != 1:
            args += ["--grad-accum", str(self.accum)]
        return args

    @property
    def onnx(self) -> str:
        return (self.subdir + "/" if self.subdir else "") + (self.graph or self.name) + ".onnx"


def trainable(name: str, train=(), freeze=()) -> bool:
    """protocol.md: a PATTERN is a glob (`*` matches dots too) or a dotted prefix."""
    import fnmatch

    def hit(p):
        return name == p or name.startswith(p + ".") or fnmatch.fnmatchcase(name, p)
    if train:
        return any(hit(p) for p in train)
    return not any(hit(p) for p in freeze)


# ---------------------------------------------------------------- builders

def _tv(fn_name, **kw):
    def build():
        import torchvision
        fn = getattr(torchvision.models, fn_name)
        try:
            return fn(weights=None, **kw)
        except TypeError:  # very old torchvision
            return fn(pretrained=False, **kw)
    return build


def _own(cls_name, **kw):
    def build():
        from validate import nets
        return getattr(nets, cls_name)(**kw)
    return build


def _bert_hf():
    from transformers import BertConfig, BertForSequenceClassification
    from validate.nets import LogitsOnly
    cfg = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                     intermediate_size=3072, max_position_embeddings=512, num_labels=2)
    return LogitsOnly(BertForSequenceClassification(cfg), use_cache_flag=False)


def _gpt2_hf():
    from transformers import GPT2Config, GPT2LMHeadModel
    from validate.nets import LogitsOnly
    cfg = GPT2Config(vocab_size=32000, n_positions=256, n_embd=512, n_layer=6, n_head=8, use_cache=False)
    return LogitsOnly(GPT2LMHeadModel(cfg), use_cache_flag=True)


def _distilbert_hf():
    from transformers import DistilBertConfig, DistilBertForSequenceClassification
    from validate.nets import LogitsOnly
    cfg = DistilBertConfig(vocab_size=30522, dim=768, n_layers=6, n_heads=12, hidden_dim=3072,
                           max_position_embeddings=512, num_labels=2)
    return LogitsOnly(DistilBertForSequenceClassification(cfg), use_cache_flag=False)


def _llama_hf():
    from transformers import LlamaConfig, LlamaForCausalLM
    from validate.nets import LogitsOnly
    cfg = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=6,
                      num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=256,
                      use_cache=False, tie_word_embeddings=False)
    return LogitsOnly(LlamaForCausalLM(cfg), use_cache_flag=True)


IMG = [InputSpec("input", (3, 224, 224))]
CLS1000 = TargetSpec((), 1000)


def _img(name, fn, batches, notes=""):
    return Entry(name, _tv(fn), IMG, "ce", CLS1000, batches, "torchvision.models.%s(weights=None)" % fn,
                 family="cnn" if "vit" not in fn else "vit", notes=notes)


ZOO: List[Entry] = [
    _img("resnet18", "resnet18", (64, 256)),
    _img("resnet50", "resnet50", (32, 128)),
    _img("vgg11_bn", "vgg11_bn", (32, 96)),
    _img("mobilenet_v2", "mobilenet_v2", (64, 128)),
    _img("densenet121", "densenet121", (32, 64)),
    _img("efficientnet_b0", "efficientnet_b0", (32, 96)),
    _img("convnext_tiny", "convnext_tiny", (32, 64)),
    _img("vit_b_16", "vit_b_16", (32, 64)),
    Entry("mobilenet_v3_small", _tv("mobilenet_v3_small"), IMG, "sum", None, (64, 256),
          "torchvision.models.mobilenet_v3_small(weights=None)", family="cnn",
          notes="loss `sum`: out.float().sum(), no target"),
    Entry("unet", _own("UNet", in_ch=3, n_classes=5, base=32, depth=4), [InputSpec("input", (3, 256, 256))],
          "ce", TargetSpec((256, 256), 5), (8, 24), "validate.nets.UNet(base=32, depth=4)", family="cnn",
          notes="segmentation CE: out [B,5,256,256], int64 target [B,256,256]"),
    Entry("conv_autoencoder", _own("ConvAutoencoder"), [InputSpec("input", (3, 128, 128))], "mse", None,
          (64, 256), "validate.nets.ConvAutoencoder(base=32)", family="cnn",
          notes="loss `mse`: target has the output's shape and dtype"),
    Entry("mlp", _own("MLP"), [InputSpec("input", (1024,))], "ce", TargetSpec((), 10), (512, 4096),
          "validate.nets.MLP(1024 -> 4096 -> 4096 -> 2048 -> 10, dropout 0.1)", family="mlp"),
    Entry("lstm_lm", _own("LSTMLM"), [InputSpec("tokens", ("seq",), "int64", 10000)], "ce",
          TargetSpec(("seq",), 10000), (32, 64), "validate.nets.LSTMLM(vocab 10000, 2x512 LSTM)",
          dims={"seq": 128}, output_axes={0: "batch", 1: "seq"}, family="rnn",
          notes="cuDNN LSTM on the GPU; LM CE over [B,T,V]"),
    Entry("transformer_encoder", _own("TransformerClassifier"), [InputSpec("tokens", ("seq",), "int64", 16000)],
          "ce", TargetSpec((), 10), (32, 64),
          "validate.nets.TransformerClassifier(nn.TransformerEncoder 6x512, batch_first, dropout 0.1)",
          dims={"seq": 256}, family="transformer"),
    Entry("gpt_mini", _own("GPTMini"), [InputSpec("tokens", ("seq",), "int64", 32000)], "ce",
          TargetSpec(("seq",), 32000), (8, 16), "validate.nets.GPTMini(6 layers, d 512, vocab 32000)",
          dims={"seq": 256}, output_axes={0: "batch", 1: "seq"}, family="transformer",
          notes="plain-torch GPT: attention written out (matmul/mask/softmax)"),
    Entry("bert_mini", _own("BERTMini"), [InputSpec("tokens", ("seq",), "int64", 30522)], "ce",
          TargetSpec((), 2), (32, 64), "validate.nets.BERTMini(6 layers, d 512, post-LN)",
          dims={"seq": 128}, family="transformer",
          notes="plain-torch BERT: attention written out"),
    Entry("bert_hf", _bert_hf, [InputSpec("input_ids", ("seq",), "int64", 30522)], "ce", TargetSpec((), 2),
          (32, 64), "transformers.BertForSequenceClassification(BertConfig(): base, 12x768, 2 labels)",
          dims={"seq": 128}, needs="transformers", family="transformer",
          notes="return_dict=False; default attention implementation (sdpa)"),
    Entry("gpt2_hf", _gpt2_hf, [InputSpec("input_ids", ("seq",), "int64", 32000)], "ce",
          TargetSpec(("seq",), 32000), (8, 16),
          "transformers.GPT2LMHeadModel(GPT2Config(n_layer=6, n_embd=512, n_head=8, vocab 32000, n_positions 256))",
          dims={"seq": 256}, output_axes={0: "batch", 1: "seq"}, export="dynamo", needs="transformers",
          family="transformer", notes="use_cache=False, return_dict=False; tied LM head"),
]

BY_NAME = {e.name: e for e in ZOO}

# Measurement order: the most telling models first, so that a run cut short by its
# deadline still covers every family.
_ORDER = ["resnet50", "vit_b_16", "gpt_mini", "bert_hf", "gpt2_hf", "unet", "mlp", "lstm_lm",
          "transformer_encoder", "bert_mini", "resnet18", "mobilenet_v2", "convnext_tiny", "efficientnet_b0",
          "densenet121", "vgg11_bn", "mobilenet_v3_small", "conv_autoencoder"]
assert sorted(_ORDER) == sorted(BY_NAME), "every zoo model needs a place in _ORDER"
ZOO = [BY_NAME[n] for n in _ORDER]


# ---------------------------------------------------------------- hold-out set

def _hold(name, fn, batches, notes="", **kw):
    src = "torchvision.models.%s(weights=None%s)" % (fn, "".join(", %s=%r" % kv for kv in kw.items()))
    return Entry(name, _tv(fn, **kw), IMG, "ce", CLS1000, batches, src, family="vit" if "swin" in fn else "cnn",
                 notes=notes, subdir="holdout")


# Architectures memest was never tuned on: measured and exported separately
# (`--set holdout`; models/holdout/, results/holdout-*.jsonl). Not part of ZOO.
HOLDOUT: List[Entry] = [
    _hold("squeezenet1_1", "squeezenet1_1", (64, 256)),
    _hold("shufflenet_v2_x1_0", "shufflenet_v2_x1_0", (64, 256)),
    _hold("regnet_y_400mf", "regnet_y_400mf", (64, 128)),
    _hold("mnasnet1_0", "mnasnet1_0", (64, 128)),
    _hold("resnext50_32x4d", "resnext50_32x4d", (32, 96)),
    _hold("googlenet", "googlenet", (32, 128), aux_logits=False, init_weights=True),
    _hold("wide_resnet50_2", "wide_resnet50_2", (32, 64)),
    Entry("swin_t", _tv("swin_t"), IMG, "ce", CLS1000, (32, 64), "torchvision.models.swin_t(weights=None)",
          family="vit", subdir="holdout", exporters=("legacy",),
          notes="legacy exporter only (training mode, opset 17); dropped from the set if that fails"),
    Entry("distilbert_hf", _distilbert_hf, [InputSpec("input_ids", ("seq",), "int64", 30522)], "ce",
          TargetSpec((), 2), (32, 64),
          "transformers.DistilBertForSequenceClassification(DistilBertConfig(): 6x768, 12 heads, 2 labels)",
          dims={"seq": 128}, needs="transformers", family="transformer", subdir="holdout",
          notes="return_dict=False; default attention implementation"),
    Entry("llama_hf", _llama_hf, [InputSpec("input_ids", ("seq",), "int64", 32000)], "ce",
          TargetSpec(("seq",), 32000), (8, 16),
          "transformers.LlamaForCausalLM(LlamaConfig(6 layers, d 512, ffn 1408, 8 heads, 4 kv heads, vocab 32000))",
          dims={"seq": 256}, output_axes={0: "batch", 1: "seq"}, needs="transformers", family="transformer",
          subdir="holdout", notes="use_cache=False, return_dict=False; untied LM head; GQA"),
]
HOLDOUT_BY_NAME = {e.name: e for e in HOLDOUT}
assert not set(HOLDOUT_BY_NAME) & set(BY_NAME), "hold-out models must not be in the zoo"


# ---------------------------------------------------------------- blind set

def _roberta_hf():
    from transformers import RobertaConfig, RobertaForSequenceClassification
    from validate.nets import LogitsOnly
    cfg = RobertaConfig(vocab_size=50265, hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                        intermediate_size=2048, max_position_embeddings=514, num_labels=3)
    return LogitsOnly(RobertaForSequenceClassification(cfg), use_cache_flag=False)


def _blind(name, fn, batches, **kw):
    e = _hold(name, fn, batches, **kw)
    e.subdir = "blind"
    return e


# Measured once, after the hold-out set's convolutions had been probed for the cuDNN
# table (validate kernels): models whose layers memest was never tuned or probed on.
# `--set blind`; models/blind/, results/blind-*.jsonl.
BLIND: List[Entry] = [
    _blind("resnet34", "resnet34", (64, 192)),
    _blind("resnet101", "resnet101", (32, 96)),
    _blind("mobilenet_v3_large", "mobilenet_v3_large", (64, 192)),
    _blind("efficientnet_b1", "efficientnet_b1", (32, 64)),
    _blind("regnet_x_800mf", "regnet_x_800mf", (64, 128)),
    _blind("mnasnet0_5", "mnasnet0_5", (64, 256)),
    _blind("shufflenet_v2_x0_5", "shufflenet_v2_x0_5", (64, 256)),
    _blind("vgg13_bn", "vgg13_bn", (32, 64)),
    _blind("vit_b_32", "vit_b_32", (64, 128)),
    Entry("roberta_hf", _roberta_hf, [InputSpec("input_ids", ("seq",), "int64", 50265)], "ce", TargetSpec((), 3),
          (32, 64), "transformers.RobertaForSequenceClassification(RobertaConfig(6x512, 8 heads, ffn 2048, 3 labels))",
          dims={"seq": 128}, needs="transformers", family="transformer", subdir="blind",
          notes="return_dict=False; default attention implementation"),
]
for _e in BLIND:
    if "vit" in _e.name:
        _e.family = "vit"
BLIND_BY_NAME = {e.name: e for e in BLIND}
assert not set(BLIND_BY_NAME) & (set(BY_NAME) | set(HOLDOUT_BY_NAME)), "blind models must be new"
SETS = {"zoo": ZOO, "holdout": HOLDOUT, "blind": BLIND}


def lookup(name: str) -> Entry:
    """A model of any set by name (the names are disjoint); `rndS_I` is a random model."""
    from validate.corpus import CORPUS_BY_NAME
    from validate.finetune import FINETUNE_BY_NAME
    for table in (BY_NAME, HOLDOUT_BY_NAME, BLIND_BY_NAME, CORPUS_BY_NAME, FINETUNE_BY_NAME):
        if name in table:
            return table[name]
    if name.startswith(("st_", "sh_", "sv_")):
        from validate import sample
        return sample.entry_of(name)
    if name.startswith("rnd") and "_" in name:
        from validate import randnet
        seed, i = name[3:].split("_", 1)
        return randnet.entry_of(int(seed), int(i))
    raise KeyError(name)


def set_entries(set_name: str) -> List[Entry]:
    """The models of a set: zoo, holdout, blind, corpus, finetune, or random:SEED:N."""
    if set_name == "corpus":
        from validate.corpus import CORPUS
        return list(CORPUS)
    if set_name == "finetune":  # validate/finetune.py imports this module: read lazily
        from validate.finetune import FINETUNE
        return list(FINETUNE)
    if set_name.startswith("sample:"):
        from validate import sample
        _, seed, n = set_name.split(":")
        return sample.entries(int(seed), int(n))
    if set_name.startswith("random:"):
        from validate import randnet
        seed, n = randnet.parse_set(set_name)
        return randnet.entries(seed, n)
    if set_name not in SETS:
        raise SystemExit("unknown model set %r; known: %s, corpus, finetune, random:SEED:N, sample:SEED:N" % (set_name, ", ".join(SETS)))
    return list(SETS[set_name])

# ---------------------------------------------------------------- configurations

OPTIMS = ("sgd", "sgdm", "adam", "adamw")
AMPS = ("fp32", "fp16", "bf16")

# (batch tag, amp, optimizer) per model: six at B1, two at the bigger B2.
CONFIGS = [
    "b1-fp32-sgd", "b1-fp32-adam", "b1-fp16-adam", "b1-bf16-adamw", "b1-fp16-sgdm", "b1-fp32-sgdm",
    "b2-fp16-adam", "b2-fp32-adamw",
]


@dataclass
class Config:
    name: str
    batch: int
    amp: str  # fp32 | fp16 | bf16
    optim: str  # sgd | adam | adamw (sgdm is sgd with momentum 0.9)
    momentum: float

    def memest_args(self, entry: Entry) -> List[str]:
        args = ["--batch", str(self.batch), "--optim", self.optim]
        if self.momentum:
            args += ["--momentum", "%g" % self.momentum]
        if self.amp != "fp32":
            args += ["--amp", self.amp]
        return args + entry.memest_extra() + entry.finetune_args()

    @property
    def amp_field(self):
        return "none" if self.amp == "fp32" else self.amp


def parse_config(entry: Entry, text: str) -> Config:
    """`b1-fp16-adam`, `b2-fp32-sgdm`, `bs48-bf16-adamw` -> Config."""
    parts = text.split("-")
    if len(parts) != 3:
        raise ValueError("config %r: want BATCH-AMP-OPTIM, e.g. b1-fp16-adam" % text)
    btag, amp, opt = parts
    if btag == "b1":
        batch = entry.batches[0]
    elif btag == "b2":
        batch = entry.batches[1]
    elif btag.startswith("bs") and btag[2:].isdigit():
        batch = int(btag[2:])
    else:
        raise ValueError("config %r: batch tag must be b1, b2 or bsN" % text)
    if amp not in AMPS:
        raise ValueError("config %r: amp must be one of %s" % (text, AMPS))
    if opt not in OPTIMS:
        raise ValueError("config %r: optimizer must be one of %s" % (text, OPTIMS))
    momentum = 0.9 if opt == "sgdm" else 0.0
    return Config(text, batch, amp, "sgd" if opt == "sgdm" else opt, momentum)


def select(names: Optional[str], set_name: str = "zoo") -> List[Entry]:
    if names and set_name.startswith(("sample:", "random:")):
        # Drawn sets rebuild each model from its name: no need to draw the set again.
        return [lookup(n.strip()) for n in names.split(",")]
    entries = set_entries(set_name)
    pool = {e.name: e for e in entries}
    if not names:
        return entries
    out = []
    for n in names.split(","):
        n = n.strip()
        if n not in pool:
            raise SystemExit("unknown %s model %r; known: %s" % (set_name, n, ", ".join(pool)))
        out.append(pool[n])
    return out


# ---------------------------------------------------------------- checkpointing

def apply_checkpoint(entry: Entry, model) -> str:
    """Wrap each top-level repeated block in torch.utils.checkpoint (use_reentrant=False)."""
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint

    class Ckpt(nn.Module):
        def __init__(self, block):
            super().__init__()
            self.block = block

        def forward(self, *args, **kwargs):
            return checkpoint(self.block, *args, use_reentrant=False, **kwargs)

    def wrap_seq(seq):
        for i in range(len(seq)):
            seq[i] = Ckpt(seq[i])
        return len(seq)

    n = 0
    if entry.name.startswith("resnet"):
        for lname in ("layer1", "layer2", "layer3", "layer4"):
            n += wrap_seq(getattr(model, lname))
        return "each Bottleneck/BasicBlock of layer1..4 (%d)" % n
    if entry.name.startswith("vit"):
        n = wrap_seq(model.encoder.layers)
        return "each EncoderBlock of encoder.layers (%d)" % n
    if entry.name in ("gpt_mini", "bert_mini"):
        n = wrap_seq(model.blocks)
        return "each Block of blocks (%d)" % n
    if entry.name in ("gpt2_hf", "bert_hf"):
        model.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        return "transformers gradient_checkpointing_enable(use_reentrant=False): each layer"
    raise ValueError("no checkpoint wrapping defined for %s" % entry.name)
