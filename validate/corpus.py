"""The corpus: architectures beyond the zoo, hold-out and blind sets (issue 18).

What people train, from the libraries of the GPU machine (timm, transformers,
torchvision, torchaudio) built from configs with random weights, plus a few models
written out (GANs, a diffusion UNet, a causal dilated Conv1d stack, a 3-D conv net).
Each entry is an ordinary zoo.Entry (subdir "corpus"), so measure, export and compare
take `--set corpus`. Sizes are kept small enough that a case runs in about a second
on an H200; the configs of a case are CORPUS_CONFIGS.

Nothing here was tuned on before it was measured: the first measurement of this set
(results/corpus-*.jsonl) is what memest's mechanisms were then checked against.
"""
from typing import List

from validate.zoo import Entry, InputSpec, TargetSpec

CORPUS_CONFIGS = ["b1-fp32-adam", "b1-fp16-adam", "b1-bf16-adamw", "b2-fp32-sgdm"]

TOK = "int64"


# ---------------------------------------------------------------- wrappers

def _wrap_logits(model, **call):
    """forward(*inputs) -> the first tensor of the model's output (use_cache off)."""
    import torch.nn as nn

    class Logits(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.model = m

        def forward(self, input_ids):
            out = self.model(input_ids, return_dict=False, **call)
            return out[0]
    return Logits(model)


def _wrap_seq2seq(model):
    """An encoder-decoder trained on (input_ids -> the same ids as decoder input): logits [B, T, V]."""
    import torch.nn as nn

    class Seq2Seq(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.model = m

        def forward(self, input_ids):
            return self.model(input_ids=input_ids, decoder_input_ids=input_ids, use_cache=False,
                              return_dict=False)[0]
    return Seq2Seq(model)


def _wrap_whisper(model):
    import torch.nn as nn

    class Whisper(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.model = m

        def forward(self, input_features, decoder_input_ids):
            return self.model(input_features=input_features, decoder_input_ids=decoder_input_ids, use_cache=False,
                              return_dict=False)[0]
    return Whisper(model)


def _wrap_first(model, key=None):
    """forward(x) -> model(x)[key] or the first element of a tuple/list/ModelOutput."""
    import torch
    import torch.nn as nn

    class First(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.model = m

        def forward(self, x):
            out = self.model(x)
            if key is not None:
                out = out[key]
            while not torch.is_tensor(out):
                out = out[0] if not isinstance(out, dict) else next(iter(out.values()))
            return out
    return First(model)


# ---------------------------------------------------------------- builders

def _hf(auto, cfg_cls, wrap="logits", **cfg):
    def build():
        import transformers
        config = getattr(transformers, cfg_cls)(**cfg)
        if hasattr(config, "use_cache"):
            config.use_cache = False
        model = getattr(transformers, auto).from_config(config)
        if wrap == "logits":
            return _wrap_logits(model)
        if wrap == "seq2seq":
            return _wrap_seq2seq(model)
        if wrap == "whisper":
            return _wrap_whisper(model)
        if wrap == "image":
            return _wrap_first(_PixelValues(model))
        return _wrap_first(model)
    return build


def _PixelValues(model):
    import torch.nn as nn

    class PV(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.model = m

        def forward(self, x):
            return self.model(pixel_values=x, return_dict=False)
    return PV(model)


def _timm(name, **kw):
    def build():
        import timm
        return timm.create_model(name, pretrained=False, **kw)
    return build


def _tv(path, **kw):
    def build():
        import torchvision
        mod = torchvision.models
        for part in path.split("."):
            mod = getattr(mod, part)
        m = mod(weights=None, **kw)
        if path.startswith("segmentation.") or path.startswith("optical_flow."):
            return _wrap_first(m, "out" if path.startswith("segmentation.") else None)
        return m
    return build


def _own(cls_name, **kw):
    def build():
        from validate import corpus_nets
        return getattr(corpus_nets, cls_name)(**kw)
    return build


def _ta(fn, **kw):
    def build():
        import torchaudio
        from validate import corpus_nets
        m = getattr(torchaudio.models, fn)(**kw)
        return corpus_nets.AudioFirst(m)
    return build


# ---------------------------------------------------------------- entries

def _dec(name, cfg_cls, batches=(4, 8), seq=256, vocab=32000, **cfg):
    """A decoder LM from a transformers config: CE over [B, T, V]."""
    return Entry(name, _hf("AutoModelForCausalLM", cfg_cls, vocab_size=vocab, **cfg),
                 [InputSpec("input_ids", ("seq",), TOK, vocab)], "ce", TargetSpec(("seq",), vocab), batches,
                 "transformers %s(%s)" % (cfg_cls, ", ".join("%s=%r" % kv for kv in cfg.items())),
                 dims={"seq": seq}, output_axes={0: "batch", 1: "seq"}, needs="transformers",
                 family="decoder", subdir="corpus")


def _enc(name, cfg_cls, batches=(16, 32), seq=128, vocab=30522, **cfg):
    """An encoder with a 2-label sequence-classification head."""
    return Entry(name, _hf("AutoModelForSequenceClassification", cfg_cls, vocab_size=vocab, num_labels=2, **cfg),
                 [InputSpec("input_ids", ("seq",), TOK, vocab)], "ce", TargetSpec((), 2), batches,
                 "transformers %s(%s)" % (cfg_cls, ", ".join("%s=%r" % kv for kv in cfg.items())),
                 dims={"seq": seq}, needs="transformers", family="encoder", subdir="corpus")


def _s2s(name, cfg_cls, batches=(8, 16), seq=128, vocab=32000, **cfg):
    """An encoder-decoder: the ids are both the source and the decoder input; CE over [B, T, V]."""
    return Entry(name, _hf("AutoModelForSeq2SeqLM", cfg_cls, wrap="seq2seq", vocab_size=vocab, **cfg),
                 [InputSpec("input_ids", ("seq",), TOK, vocab)], "ce", TargetSpec(("seq",), vocab), batches,
                 "transformers %s(%s)" % (cfg_cls, ", ".join("%s=%r" % kv for kv in cfg.items())),
                 dims={"seq": seq}, output_axes={0: "batch", 1: "seq"}, needs="transformers",
                 family="encdec", subdir="corpus")


def _img(name, build, batches, size=224, family="cnn", source="", classes=1000, loss="ce"):
    return Entry(name, build, [InputSpec("input", (3, size, size))], loss,
                 TargetSpec((), classes) if loss == "ce" else None, batches, source or name,
                 needs="timm" if source.startswith("timm") else None, family=family, subdir="corpus")


def _t(name, batches, family="cnn", size=224, **kw):
    return _img(name, _timm(name, **kw), batches, size=size, family=family, source="timm.create_model(%r)" % name)


def _hfimg(name, cfg_cls, auto, batches, size=224, family="vit", **cfg):
    return Entry(name, _hf(auto, cfg_cls, wrap="image", **cfg), [InputSpec("input", (3, size, size))], "ce",
                 TargetSpec((), 10), batches, "transformers %s" % cfg_cls, needs="transformers", family=family,
                 subdir="corpus")


SMALL_DEC = dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8,
                 max_position_embeddings=512)

CORPUS: List[Entry] = [
    # decoders
    _dec("qwen2", "Qwen2Config", num_key_value_heads=2, tie_word_embeddings=False, **SMALL_DEC),
    _dec("mistral", "MistralConfig", num_key_value_heads=4, **SMALL_DEC),
    _dec("gemma", "GemmaConfig", num_key_value_heads=1, head_dim=64, **SMALL_DEC),
    _dec("phi", "PhiConfig", hidden_size=512, intermediate_size=2048, num_hidden_layers=4, num_attention_heads=8,
         max_position_embeddings=512),
    _dec("gpt_neox", "GPTNeoXConfig", hidden_size=512, intermediate_size=2048, num_hidden_layers=4,
         num_attention_heads=8, max_position_embeddings=512),
    _dec("falcon", "FalconConfig", hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
         new_decoder_architecture=False, multi_query=True),
    _dec("opt", "OPTConfig", hidden_size=512, ffn_dim=2048, num_hidden_layers=4, num_attention_heads=8,
         max_position_embeddings=512, word_embed_proj_dim=512),
    _dec("bloom", "BloomConfig", hidden_size=512, n_layer=4, n_head=8),
    _dec("gpt_bigcode", "GPTBigCodeConfig", n_embd=512, n_layer=4, n_head=8, n_positions=512, multi_query=True),
    _dec("stablelm", "StableLmConfig", num_key_value_heads=8, **SMALL_DEC),
    _dec("olmo", "OlmoConfig", num_key_value_heads=8, **SMALL_DEC),
    _dec("gptj", "GPTJConfig", n_embd=512, n_layer=4, n_head=8, n_positions=512, rotary_dim=32),
    # encoders
    _enc("deberta_v2", "DebertaV2Config", hidden_size=384, num_hidden_layers=4, num_attention_heads=6,
         intermediate_size=1536, max_position_embeddings=512, relative_attention=True, pos_att_type=["p2c", "c2p"]),
    _enc("electra", "ElectraConfig", hidden_size=256, embedding_size=128, num_hidden_layers=6, num_attention_heads=4,
         intermediate_size=1024),
    _enc("albert", "AlbertConfig", hidden_size=512, embedding_size=128, num_hidden_layers=6, num_attention_heads=8,
         intermediate_size=2048),
    _enc("xlm_roberta", "XLMRobertaConfig", batches=(16, 32), vocab=50000, hidden_size=384, num_hidden_layers=4,
         num_attention_heads=6, intermediate_size=1536, max_position_embeddings=514),
    _enc("mpnet", "MPNetConfig", hidden_size=384, num_hidden_layers=4, num_attention_heads=6,
         intermediate_size=1536, max_position_embeddings=514),
    _enc("funnel", "FunnelConfig", d_model=256, n_head=4, d_head=64, d_inner=1024, block_sizes=[2, 2]),
    # encoder-decoders
    _s2s("t5", "T5Config", d_model=256, d_kv=32, d_ff=1024, num_layers=3, num_heads=8,
         decoder_start_token_id=0),
    _s2s("bart", "BartConfig", d_model=256, encoder_layers=3, decoder_layers=3, encoder_attention_heads=4,
         decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024, max_position_embeddings=512),
    _s2s("pegasus", "PegasusConfig", d_model=256, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
         decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024, max_position_embeddings=512),
    _s2s("marian", "MarianConfig", d_model=256, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
         decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024, max_position_embeddings=512,
         decoder_start_token_id=0, pad_token_id=0),
    Entry("whisper", _hf("AutoModelForSpeechSeq2Seq", "WhisperConfig", wrap="whisper", vocab_size=8000, d_model=256,
                         encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                         encoder_ffn_dim=1024, decoder_ffn_dim=1024, num_mel_bins=80, max_source_positions=1500,
                         max_target_positions=448),
          [InputSpec("input_features", (80, 3000)), InputSpec("decoder_input_ids", ("seq",), TOK, 8000)], "ce",
          TargetSpec(("seq",), 8000), (8, 16), "transformers WhisperConfig(d 256, 2+2 layers)",
          dims={"seq": 128}, output_axes={0: "batch", 1: "seq"}, needs="transformers", family="encdec",
          subdir="corpus"),
    # vision and audio transformers (transformers)
    _hfimg("hf_vit", "ViTConfig", "AutoModelForImageClassification", (32, 64), hidden_size=384, num_hidden_layers=6,
           num_attention_heads=6, intermediate_size=1536, num_labels=10),
    _hfimg("swinv2", "Swinv2Config", "AutoModelForImageClassification", (16, 32), image_size=224, embed_dim=48,
           depths=[2, 2, 2, 2], num_heads=[3, 6, 12, 24], window_size=7, num_labels=10),
    _hfimg("beit", "BeitConfig", "AutoModelForImageClassification", (16, 32), hidden_size=384, num_hidden_layers=4,
           num_attention_heads=6, intermediate_size=1536, use_relative_position_bias=True, num_labels=10),
    _hfimg("segformer", "SegformerConfig", "AutoModelForSemanticSegmentation", (8, 16), family="seg",
           num_labels=10),
    _hfimg("dinov2", "Dinov2Config", "AutoModelForImageClassification", (16, 32), hidden_size=384,
           num_hidden_layers=4, num_attention_heads=6, image_size=224, patch_size=14, num_labels=10),
    _hfimg("convnextv2", "ConvNextV2Config", "AutoModelForImageClassification", (16, 32), family="cnn",
           hidden_sizes=[48, 96, 192, 384], depths=[2, 2, 6, 2], num_labels=10),
    Entry("wav2vec2", _hf("AutoModelForSequenceClassification", "Wav2Vec2Config", wrap="first", hidden_size=256,
                          num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024, num_labels=4,
                          do_stable_layer_norm=True, feat_extract_norm="layer"),
          [InputSpec("input", (16000,))], "ce", TargetSpec((), 4), (16, 32), "transformers Wav2Vec2Config(256, 4 layers)",
          needs="transformers", family="audio", subdir="corpus"),
    # timm
    _t("resnet26d", (32, 96)),
    _t("mixnet_s", (32, 96)),
    _t("convnext_atto", (32, 96)),
    _t("vit_small_patch16_224", (32, 64), family="vit"),
    _t("deit_tiny_patch16_224", (32, 96), family="vit"),
    _t("mixer_s16_224", (32, 64), family="mlp_mixer"),
    _t("resmlp_12_224", (32, 64), family="mlp_mixer"),
    _t("levit_128s", (32, 96), family="hybrid"),
    _t("poolformer_s12", (32, 64), family="hybrid"),
    _t("ghostnet_100", (32, 96)),
    _t("rexnet_100", (32, 96)),
    _t("dla34", (32, 64)),
    _t("cspresnet50", (16, 48)),
    _t("mobilevitv2_050", (32, 64), size=256, family="hybrid"),
    _t("edgenext_small", (32, 64), size=256, family="hybrid"),
    _t("res2net50_26w_4s", (16, 48)),
    _t("skresnet18", (32, 96)),
    _t("inception_v3", (16, 48), size=299),
    _t("hrnet_w18_small", (16, 32)),
    _t("coatnet_nano_rw_224", (16, 32), family="hybrid"),
    _t("maxvit_nano_rw_256", (8, 16), size=256, family="hybrid"),
    _t("nf_resnet26", (16, 48)),
    _t("tinynet_a", (32, 96), size=192),
    _t("gernet_s", (32, 96)),
    _t("efficientformer_l1", (32, 64), family="hybrid"),
    _t("swin_tiny_patch4_window7_224", (16, 32), family="vit"),
    # torchvision: segmentation, video, optical flow
    _img("deeplabv3_mobilenet_v3_large", _tv("segmentation.deeplabv3_mobilenet_v3_large", num_classes=10,
                                             aux_loss=False, weights_backbone=None), (8, 16), size=256,
         family="seg", source="torchvision deeplabv3_mobilenet_v3_large", loss="sum"),
    _img("lraspp_mobilenet_v3_large", _tv("segmentation.lraspp_mobilenet_v3_large", num_classes=10,
                                          weights_backbone=None), (8, 16), size=256, family="seg",
         source="torchvision lraspp_mobilenet_v3_large", loss="sum"),
    _img("fcn_resnet50", _tv("segmentation.fcn_resnet50", num_classes=10, aux_loss=False, weights_backbone=None),
         (4, 8), size=256, family="seg", source="torchvision fcn_resnet50", loss="sum"),
    Entry("r3d_18", _tv("video.r3d_18", num_classes=10), [InputSpec("input", (3, 16, 112, 112))], "ce",
          TargetSpec((), 10), (4, 8), "torchvision.models.video.r3d_18", family="video", subdir="corpus"),
    Entry("r2plus1d_18", _tv("video.r2plus1d_18", num_classes=10), [InputSpec("input", (3, 8, 112, 112))], "ce",
          TargetSpec((), 10), (4, 8), "torchvision.models.video.r2plus1d_18", family="video", subdir="corpus"),
    Entry("s3d", _tv("video.s3d", num_classes=10), [InputSpec("input", (3, 16, 160, 160))], "ce",
          TargetSpec((), 10), (2, 4), "torchvision.models.video.s3d", family="video", subdir="corpus"),
    # torchaudio
    Entry("conv_tasnet", _ta("conv_tasnet_base", num_sources=2), [InputSpec("input", (1, 16000))], "sum", None,
          (4, 8), "torchaudio.models.conv_tasnet_base(2 sources)", needs="torchaudio", family="audio",
          subdir="corpus"),
    Entry("wav2letter", _ta("Wav2Letter", num_classes=40, input_type="mfcc", num_features=40),
          [InputSpec("input", (40, 400))], "sum", None, (16, 32), "torchaudio.models.Wav2Letter(mfcc 40)",
          needs="torchaudio", family="audio", subdir="corpus"),
    # written out
    Entry("dcgan_g", _own("DCGANGenerator"), [InputSpec("input", (100, 1, 1))], "sum", None, (64, 256),
          "validate.corpus_nets.DCGANGenerator (ConvTranspose2d 100->64x64x3)", family="gan", subdir="corpus"),
    Entry("dcgan_d", _own("DCGANDiscriminator"), [InputSpec("input", (3, 64, 64))], "ce", TargetSpec((), 2),
          (64, 256), "validate.corpus_nets.DCGANDiscriminator", family="gan", subdir="corpus"),
    Entry("diffusion_unet", _own("DiffusionUNet"), [InputSpec("input", (3, 64, 64))], "mse", None, (8, 32),
          "validate.corpus_nets.DiffusionUNet (GroupNorm, SiLU, attention at 16x16)", family="diffusion",
          subdir="corpus"),
    Entry("wavenet", _own("WaveNet"), [InputSpec("input", (32, 4096))], "mse", None, (8, 16),
          "validate.corpus_nets.WaveNet (F.pad + dilated causal Conv1d, gated)", family="cnn1d", subdir="corpus"),
    Entry("conv3d_net", _own("Conv3DNet"), [InputSpec("input", (1, 32, 64, 64))], "ce", TargetSpec((), 5), (4, 8),
          "validate.corpus_nets.Conv3DNet", family="cnn3d", subdir="corpus"),
    Entry("atrous_seg", _own("AtrousSeg"), [InputSpec("input", (3, 128, 128))], "ce", TargetSpec((128, 128), 6),
          (8, 16), "validate.corpus_nets.AtrousSeg (dilated convs, ASPP)", family="seg", subdir="corpus"),
    Entry("relpos_encdec", _own("RelPosEncDec"), [InputSpec("tokens", ("seq",), TOK, 8000)], "ce",
          TargetSpec(("seq",), 8000), (8, 16), "validate.corpus_nets.RelPosEncDec (T5-style relative bias, eager)",
          dims={"seq": 128}, output_axes={0: "batch", 1: "seq"}, family="encdec", subdir="corpus"),
]

CORPUS_BY_NAME = {e.name: e for e in CORPUS}
assert len(CORPUS_BY_NAME) == len(CORPUS), "corpus names must be unique"
