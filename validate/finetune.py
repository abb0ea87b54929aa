"""The fine-tuning set (`--set finetune`): frozen backbones, LoRA adapters, accumulation.

Each entry is one way of training one graph: `graph` names the model whose ONNX file
it shares (models/finetune/<graph>.onnx, exported once), `train` / `freeze` / `accum`
become protocol.md's `--train`, `--freeze`, `--grad-accum` in the loop (loop.py) and in
memest's arguments (zoo.Config.memest_args), and `configs` lists the cases measured.
Parameter names are those of `model.named_parameters()`: the transformers models sit
in nets.LogitsOnly (prefix `model.`), a peft model adds `base_model.model.` and keeps
the wrapped Linear as `<name>.base_layer`, its adapters as `<name>.lora_A.default` and
`<name>.lora_B.default` (lora_dropout 0: an Identity, nothing in the graph).
"""
from typing import List

from validate.zoo import IMG, CLS1000, Entry, InputSpec, TargetSpec, _tv

SUBDIR = "finetune"
LORA = ("*lora_*",)


# ---------------------------------------------------------------- builders

from validate.corpus import _wrap_seq2seq  # noqa: E402  (the corpus's encoder-decoder wrapper)


def _lora(build, targets, r=8):
    """peft.get_peft_model(model, LoraConfig(r, target_modules)) around the wrapped model's `model`."""
    def b():
        import peft
        wrapper = build()
        cfg = peft.LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules=list(targets))
        wrapper.model = peft.get_peft_model(wrapper.model, cfg)
        return wrapper
    return b


def _bert():
    from transformers import BertConfig, BertForSequenceClassification
    from validate.nets import LogitsOnly
    cfg = BertConfig(vocab_size=30522, hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                     intermediate_size=2048, max_position_embeddings=512, num_labels=2)
    return LogitsOnly(BertForSequenceClassification(cfg), use_cache_flag=False)


def _llama(hidden=512, ffn=1408, layers=6, heads=8, kv=4, pos=256):
    def b():
        from transformers import LlamaConfig, LlamaForCausalLM
        from validate.nets import LogitsOnly
        cfg = LlamaConfig(vocab_size=32000, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
                          num_attention_heads=heads, num_key_value_heads=kv, max_position_embeddings=pos,
                          use_cache=False, tie_word_embeddings=False)
        return LogitsOnly(LlamaForCausalLM(cfg), use_cache_flag=True)
    return b


def _qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from validate.nets import LogitsOnly
    cfg = Qwen2Config(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=6,
                      num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
                      use_cache=False, tie_word_embeddings=False)
    return LogitsOnly(Qwen2ForCausalLM(cfg), use_cache_flag=True)


def _t5():
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6,
                   num_heads=8, dropout_rate=0.1, use_cache=False)
    return _wrap_seq2seq(T5ForConditionalGeneration(cfg))


def _bart():
    from transformers import BartConfig, BartForConditionalGeneration
    cfg = BartConfig(vocab_size=50265, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                     decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                     max_position_embeddings=512, use_cache=False)
    return _wrap_seq2seq(BartForConditionalGeneration(cfg))


# ---------------------------------------------------------------- entries

def _ids(vocab):
    return [InputSpec("input_ids", ("seq",), "int64", vocab)]


def _case(name, graph, build, inputs, loss, target, batches, source, configs, train=(), freeze=(), accum=1,
          **kw):
    return Entry(name, build, inputs, loss, target, batches, source, subdir=SUBDIR, graph=graph, train=tuple(train),
                 freeze=tuple(freeze), accum=accum, configs=tuple(configs), **kw)


def _img(name, fn, configs, batches=(32, 128), **kw):
    return _case(name, fn, _tv(fn), IMG, "ce", CLS1000, batches, "torchvision.models.%s(weights=None)" % fn,
                 configs, family="vit" if "vit" in fn else "cnn", **kw)


def _lm(name, graph, build, vocab, batches, source, configs, seq=256, classes=None, **kw):
    """A token model: a language model (target per token) or, with `classes`, a sequence classifier."""
    kw.setdefault("needs", "peft" if "lora" in graph else "transformers")
    target, axes = TargetSpec(("seq",), vocab), {0: "batch", 1: "seq"}
    if classes:
        target, axes = TargetSpec((), classes), {0: "batch"}
    return _case(name, graph, build, _ids(vocab), "ce", target, batches, source, configs,
                 dims={"seq": seq}, output_axes=axes, family="transformer", **kw)


_LLAMA_QKVO = ("q_proj", "k_proj", "v_proj", "o_proj")
_LLAMA_ALL = _LLAMA_QKVO + ("gate_proj", "up_proj", "down_proj")
_VIT_LAST2 = ("encoder.layers.encoder_layer_10", "encoder.layers.encoder_layer_11", "encoder.ln", "heads")
_LLAMA1B = dict(hidden=2048, ffn=5632, layers=22, heads=32, kv=4, pos=2048)
_LLAMA1B_SRC = "LlamaConfig(22 layers, d 2048, ffn 5632, 32 heads, 4 kv heads, vocab 32000): 1.1B parameters"

FINETUNE: List[Entry] = [
    # frozen CNN backbones: head only, partial unfreezing, frozen stem, accumulation
    _img("resnet50_fc", "resnet50", ("b1-fp32-adam", "b1-fp16-adam", "b2-fp16-sgdm"), train=("fc",)),
    _img("resnet50_l4fc", "resnet50", ("b1-fp16-adam", "b1-fp32-sgdm"), train=("layer4", "fc")),
    _img("resnet50_frz12", "resnet50", ("b1-fp16-adamw",), freeze=("conv1", "bn1", "layer1", "layer2")),
    _img("resnet50_acc4", "resnet50", ("b1-fp16-adam", "b1-fp32-sgd"), accum=4),
    _img("resnet50_fc_acc2", "resnet50", ("b1-fp16-adam",), train=("fc",), accum=2),
    _img("mobilenet_v2_cls", "mobilenet_v2", ("b1-fp16-adam",), batches=(64, 128), train=("classifier",)),
    # ViT: head only, the last two blocks, full fine-tuning with accumulation
    _img("vit_b_16_head", "vit_b_16", ("b1-fp16-adam", "b1-fp32-adamw"), batches=(32, 64), train=("heads",)),
    _img("vit_b_16_last2", "vit_b_16", ("b1-fp16-adamw", "b1-bf16-adamw"), batches=(32, 64), train=_VIT_LAST2),
    _img("vit_b_16_acc8", "vit_b_16", ("bs8-fp16-adam",), batches=(32, 64), accum=8),
    # an encoder, plain: frozen embeddings and first three layers
    _lm("bert_frz", "bert", _bert, 30522, (32, 64), "BertForSequenceClassification(6x512, 8 heads, 2 labels)",
        ("b1-fp16-adamw",), seq=128, classes=2, freeze=("model.bert.embeddings",) + tuple(
            "model.bert.encoder.layer.%d" % i for i in range(3))),
    # LoRA, encoder: query/value adapters; with the classifier trained too
    _lm("bert_lora", "bert_lora", _lora(_bert, ("query", "value")), 30522, (32, 64),
        "peft LoRA r=8 on query,value of BertForSequenceClassification(6x512)", ("b1-fp16-adamw", "b1-fp32-adam"),
        seq=128, classes=2, train=LORA),
    _lm("bert_lora_cls", "bert_lora", _lora(_bert, ("query", "value")), 30522, (32, 64),
        "peft LoRA r=8 on query,value of BertForSequenceClassification(6x512)", ("b1-bf16-adamw",), seq=128, classes=2,
        train=LORA + ("*classifier*",)),
    # LoRA, decoders with GQA
    _lm("llama_lora", "llama_lora", _lora(_llama(), _LLAMA_QKVO), 32000, (8, 16),
        "peft LoRA r=8 on q,k,v,o of LlamaForCausalLM(6x512, 8 heads, 4 kv heads)",
        ("b1-fp16-adamw", "b1-bf16-adamw", "b2-bf16-adamw"), train=LORA),
    _lm("llama_lora_acc4", "llama_lora", _lora(_llama(), _LLAMA_QKVO), 32000, (8, 16),
        "peft LoRA r=8 on q,k,v,o of LlamaForCausalLM(6x512, 8 heads, 4 kv heads)", ("b1-bf16-adamw",),
        train=LORA, accum=4),
    _lm("qwen2_lora", "qwen2_lora", _lora(_qwen2, _LLAMA_ALL), 32000, (8, 16),
        "peft LoRA r=8 on every projection of Qwen2ForCausalLM(6x512, 8 heads, 2 kv heads)",
        ("b1-bf16-adamw", "b1-fp32-adam"), train=LORA),
    _lm("qwen2_lora_acc2", "qwen2_lora", _lora(_qwen2, _LLAMA_ALL), 32000, (8, 16),
        "peft LoRA r=8 on every projection of Qwen2ForCausalLM(6x512, 8 heads, 2 kv heads)", ("b1-fp16-adam",),
        train=LORA, accum=2),
    # LoRA, encoder-decoders (the decoder reads the input ids); T5 stays out of fp16 (it overflows)
    _lm("t5_lora", "t5_lora", _lora(_t5, ("q", "v")), 32128, (16, 32),
        "peft LoRA r=8 on q,v of T5ForConditionalGeneration(6+6 x 512, 8 heads)", ("b1-bf16-adamw", "b1-fp32-adamw"),
        seq=128, train=LORA),
    _lm("bart_lora", "bart_lora", _lora(_bart, ("q_proj", "v_proj")), 50265, (16, 32),
        "peft LoRA r=8 on q_proj,v_proj of BartForConditionalGeneration(6+6 x 512)",
        ("b1-fp16-adamw", "b1-bf16-adamw"), seq=128, train=LORA),
    _lm("bart_lora_acc8", "bart_lora", _lora(_bart, ("q_proj", "v_proj")), 50265, (16, 32),
        "peft LoRA r=8 on q_proj,v_proj of BartForConditionalGeneration(6+6 x 512)", ("bs4-bf16-adamw",),
        seq=128, train=LORA, accum=8),
    # a 1.1B decoder at sequence 2048 in bf16: full fine-tuning and LoRA (exported at seq 32: seq is symbolic)
    _lm("llama1b", "llama1b", _llama(**_LLAMA1B), 32000, (1, 2), "LlamaForCausalLM(%s)" % _LLAMA1B_SRC,
        ("b1-bf16-adamw",), seq=2048, export_dims={"seq": 32}),
    _lm("llama1b_acc2", "llama1b", _llama(**_LLAMA1B), 32000, (1, 2), "LlamaForCausalLM(%s)" % _LLAMA1B_SRC,
        ("b1-bf16-adamw",), seq=2048, accum=2, export_dims={"seq": 32}),
    _lm("llama1b_lora", "llama1b_lora", _lora(_llama(**_LLAMA1B), _LLAMA_QKVO), 32000, (1, 4),
        "peft LoRA r=8 on q,k,v,o of LlamaForCausalLM(%s)" % _LLAMA1B_SRC, ("b1-bf16-adamw", "b2-bf16-adamw"),
        seq=2048, train=LORA, export_dims={"seq": 32}),
    _lm("llama1b_lora_acc4", "llama1b_lora", _lora(_llama(**_LLAMA1B), _LLAMA_QKVO), 32000, (1, 4),
        "peft LoRA r=8 on q,k,v,o of LlamaForCausalLM(%s)" % _LLAMA1B_SRC, ("b1-bf16-adamw",), seq=2048,
        train=LORA, accum=4, export_dims={"seq": 32}),
]
FINETUNE_BY_NAME = {e.name: e for e in FINETUNE}
