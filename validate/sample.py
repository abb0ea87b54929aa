"""Architectures drawn at random from the libraries (issue 18's blind discipline).

`--set sample:SEED:N` is N models drawn with SEED, on the GPU machine, from what its
libraries list: timm's model names (at their default input size) and transformers'
causal-LM, sequence-classification and image-classification model types (built from the
type's default config, shrunk: 2 layers, hidden 256, 4 heads, vocab 8000; an image model at
its config's image size and channels, 2 labels). Names in any of the project's sets
are left out, and so is a draw that does not build or is too large (over 60 M
parameters) or, from timm, has fewer than the 1000 classes its labels are drawn
from: the next name is drawn instead, so a seed always names the same models on
the same library versions. A model's name says how to rebuild it (`st_<timm name>`,
`sh_<model type>_<lm|cls|img>`), so the measuring worker needs nothing else. The image
task came in session 28, when the draw found only two language model types left
(blind24: 22 architectures where 30 were asked for). In session 32, when none was left
(blind27: 20 timm names where 30 were asked for), transformers' audio classifiers
(`sh_<type>_aud`: raw waveform, or the config's spectrogram) and semantic segmenters
(`sh_<type>_seg`), and torchvision's classifiers, segmenters and video classifiers
(`sv_<name>`, at the crop size of the weights' own transforms; no weights are read) joined
the draw; a draw the non-timm pools cannot fill takes timm names for the rest. In session
41, when blind36 found 14 (all timm), transformers' encoder-decoder LMs, depth estimators,
video classifiers, image-to-image and two-tower image-text models joined (`_s2s`, `_dep`,
`_vid`, `_i2i`, `_zsi`; see SESSION41_TASKS), and the other pools fill what timm cannot;
then, those having given 13 (blind37), every other model type as its bare model on token
ids or pixels (`_txt`, `_pix`).

Nothing is tuned on a sample before it is measured and compared once; the next session
takes it as training data and draws a new one.
"""
import random

from validate.zoo import Entry, InputSpec, TargetSpec

MAX_PARAMS = 60_000_000
# Session 43: timm's models up to 60 M parameters were all drawn (758 measured; blind40's
# draw found no timm name). The larger ones (ViT-L, ConvNeXt-L, Swin-L, EVA-L, ...) are
# what people fine-tune; one of 300 M takes about 5 GB in fp32 Adam, far under the cards.
MAX_PARAMS_TIMM = 300_000_000
SMALL = dict(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, num_key_value_heads=4,
             intermediate_size=1024, vocab_size=8000, max_position_embeddings=512, n_layer=2, n_embd=256,
             n_head=4, d_model=256, num_layers=2, num_heads=4, ffn_dim=1024, n_positions=512, head_dim=64)


def _timm_entry(name):
    import timm
    cfg = timm.get_pretrained_cfg(name)
    size = tuple(cfg.input_size) if cfg is not None and getattr(cfg, "input_size", None) else (3, 224, 224)

    def build():
        return timm.create_model(name, pretrained=False)
    batches = (16, 32) if max(size[1:]) <= 256 else (4, 8)
    return Entry("st_" + name, build, [InputSpec("input", size)], "ce", TargetSpec((), 1000), batches,
                 "timm.create_model(%r)" % name, needs="timm", family="sample_timm", subdir="sample")


def _hf_config(model_type):
    import transformers
    cfg = transformers.AutoConfig.for_model(model_type)
    for k, v in SMALL.items():
        if hasattr(cfg, k):
            setattr(cfg, k, v)
    for k in ("use_cache",):
        if hasattr(cfg, k):
            setattr(cfg, k, False)
    if hasattr(cfg, "num_labels"):
        cfg.num_labels = 2
    if getattr(cfg, "pad_token_id", None) is not None and cfg.pad_token_id >= 8000:
        cfg.pad_token_id = 0
    if hasattr(cfg, "pad_token_id") and cfg.pad_token_id is None:
        # A decoder's sequence classifier pools the last token that is not padding and
        # refuses a batch > 1 without a pad token (session 9: nemotron, mixtral and
        # deepseek_v3 failed so). The pad token decides which position is pooled, no shape.
        cfg.pad_token_id = 0
    return cfg


# Image classifiers the corpus builds from transformers already (validate/corpus.py's _hfimg).
CORPUS_IMAGE_TYPES = {"vit", "swinv2", "beit", "segformer", "dinov2", "convnextv2"}


def _image_size(cfg):
    size = getattr(cfg, "image_size", 224)
    if isinstance(size, (list, tuple)):
        return int(size[0]), int(size[-1])
    return int(size), int(size)


def _hf_image_entry(model_type):
    cfg = _hf_config(model_type)
    h, w = _image_size(cfg)
    channels = int(getattr(cfg, "num_channels", 3) or 3)

    def build():
        import transformers
        from validate.corpus import _PixelValues, _wrap_first
        return _wrap_first(_PixelValues(transformers.AutoModelForImageClassification.from_config(_hf_config(model_type))))
    batches = (16, 32) if max(h, w) <= 256 else (4, 8)
    return Entry("sh_%s_img" % model_type, build, [InputSpec("input", (channels, h, w))], "ce", TargetSpec((), 2),
                 batches, "transformers %s image classifier (small)" % model_type, needs="transformers",
                 family="sample_vision", subdir="sample")


def _audio_shape(cfg):
    """What the model's forward takes per sample: a spectrogram where the config sizes one
    (Whisper: mel bins x twice the encoder positions; AST: frames x mel bins), else a
    second of 16 kHz waveform (wav2vec2-like convolutional feature encoders)."""
    bins = getattr(cfg, "num_mel_bins", None)
    if bins and getattr(cfg, "max_source_positions", None):
        return (int(bins), 2 * int(cfg.max_source_positions))
    if bins and getattr(cfg, "max_length", None):
        return (int(cfg.max_length), int(bins))
    return (16000,)


def _hf_audio_entry(model_type):
    shape = _audio_shape(_hf_config(model_type))

    def build():
        import transformers
        from validate.corpus import _wrap_first
        return _wrap_first(transformers.AutoModelForAudioClassification.from_config(_hf_config(model_type)))
    return Entry("sh_%s_aud" % model_type, build, [InputSpec("input", shape)], "ce", TargetSpec((), 2), (8, 16),
                 "transformers %s audio classifier (small)" % model_type, needs="transformers",
                 family="sample_audio", subdir="sample")


def _hf_seg_entry(model_type):
    cfg = _hf_config(model_type)
    h, w = _image_size(cfg)
    channels = int(getattr(cfg, "num_channels", 3) or 3)

    def build():
        import transformers
        from validate.corpus import _PixelValues, _wrap_first
        return _wrap_first(_PixelValues(
            transformers.AutoModelForSemanticSegmentation.from_config(_hf_config(model_type))))
    batches = (8, 16) if max(h, w) <= 256 else (2, 4)
    return Entry("sh_%s_seg" % model_type, build, [InputSpec("input", (channels, h, w))], "sum", None, batches,
                 "transformers %s semantic segmentation (small)" % model_type, needs="transformers",
                 family="sample_seg", subdir="sample")


def _tv_kind(name):
    from torchvision import models
    if name in models.list_models(module=models.segmentation):
        return "seg"
    if name in models.list_models(module=models.video):
        return "video"
    return "cls" if name in models.list_models(module=models) else None


def _tv_entry(name):
    """A torchvision model at its weights' crop size (segmenters at 256, clips of 16 frames)."""
    from torchvision import models
    kind = _tv_kind(name)
    crop = 256 if kind == "seg" else int(list(models.get_model_weights(name).DEFAULT.transforms().crop_size)[0])

    def build():
        from torchvision import models
        from validate.corpus import _wrap_first
        if kind == "seg":
            return _wrap_first(models.get_model(name, weights=None, weights_backbone=None), "out")
        return models.get_model(name, weights=None)
    if kind == "seg":
        return Entry("sv_" + name, build, [InputSpec("input", (3, crop, crop))], "sum", None, (4, 8),
                     "torchvision.models.get_model(%r)" % name, family="sample_seg", subdir="sample")
    if kind == "video":
        return Entry("sv_" + name, build, [InputSpec("input", (3, 16, crop, crop))], "ce", TargetSpec((), 400),
                     (2, 4), "torchvision.models.get_model(%r)" % name, family="sample_video", subdir="sample")
    batches = (16, 32) if crop <= 256 else (4, 8)
    return Entry("sv_" + name, build, [InputSpec("input", (3, crop, crop))], "ce", TargetSpec((), 1000), batches,
                 "torchvision.models.get_model(%r)" % name, family="sample_tv", subdir="sample")


def _hf_entry(model_type, task):
    if task in SESSION41_TASKS:
        return _session41_entry(model_type, task)
    if task == "img":
        return _hf_image_entry(model_type)
    if task == "aud":
        return _hf_audio_entry(model_type)
    if task == "seg":
        return _hf_seg_entry(model_type)

    def build():
        import transformers
        from validate.corpus import _wrap_logits
        auto = transformers.AutoModelForCausalLM if task == "lm" else transformers.AutoModelForSequenceClassification
        return _wrap_logits(auto.from_config(_hf_config(model_type)))
    name = "sh_%s_%s" % (model_type, task)
    inp = [InputSpec("input_ids", ("seq",), "int64", 8000)]
    if task == "lm":
        return Entry(name, build, inp, "ce", TargetSpec(("seq",), 8000), (4, 8), "transformers %s (small)" % model_type,
                     dims={"seq": 128}, output_axes={0: "batch", 1: "seq"}, needs="transformers",
                     family="sample_decoder", subdir="sample")
    return Entry(name, build, inp, "ce", TargetSpec((), 2), (8, 16), "transformers %s (small)" % model_type,
                 dims={"seq": 128}, needs="transformers", family="sample_encoder", subdir="sample")


# ---------------------------------------------------------------- session 41's pools
# When the draw found 14 names (blind36, all timm: transformers' language, image, audio and
# segmentation types and torchvision's classifiers were all held), transformers' other
# architectures joined: encoder-decoder language models (`_s2s`: T5-like, BART-like,
# Marian, Pegasus, ProphetNet ...), depth estimators (`_dep`), video classifiers (`_vid`),
# image-to-image models (`_i2i`) and contrastive image-text models (`_zsi`: CLIP-like, two
# inputs). A type some set holds under any task is not new. These are built from a config
# shrunk further than SMALL (encoder and decoder stacks, feed-forwards, and the text and
# vision sub-configs of a two-tower model), and are usable only if a forward on the meta
# device runs (a build that runs no forward would only cost the GPU a failed case).
SMALL_SESSION41 = dict(encoder_layers=2, decoder_layers=2, num_decoder_layers=2, encoder_ffn_dim=1024,
                       decoder_ffn_dim=1024, d_ff=1024, encoder_attention_heads=4, decoder_attention_heads=4,
                       d_kv=64, num_hidden_groups=1, projection_dim=256)
SESSION41_TASKS = {
    # task: (transformers auto class, loss, labels, family)
    "s2s": ("AutoModelForSeq2SeqLM", "ce", None, "sample_encdec"),
    "dep": ("AutoModelForDepthEstimation", "sum", None, "sample_depth"),
    "vid": ("AutoModelForVideoClassification", "ce", 2, "sample_video"),
    "i2i": ("AutoModelForImageToImage", "sum", None, "sample_i2i"),
    "zsi": ("AutoModelForZeroShotImageClassification", "sum", None, "sample_clip"),
    # Any other type as its bare model (its last hidden state summed), on token ids or on
    # pixels, whichever its forward takes (the meta forward decides): the types that no
    # task mapping above or before lists (session 41's second draw).
    "txt": ("AutoModel", "sum", None, "sample_base_text"),
    "pix": ("AutoModel", "sum", None, "sample_base_vision"),
}
SESSION41_MAPPINGS = {"s2s": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
                      "dep": "MODEL_FOR_DEPTH_ESTIMATION_MAPPING_NAMES",
                      "vid": "MODEL_FOR_VIDEO_CLASSIFICATION_MAPPING_NAMES",
                      "i2i": "MODEL_FOR_IMAGE_TO_IMAGE_MAPPING_NAMES",
                      "zsi": "MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES",
                      "txt": "MODEL_MAPPING_NAMES", "pix": "MODEL_MAPPING_NAMES"}


def _shrink(cfg):
    for k, v in list(SMALL.items()) + list(SMALL_SESSION41.items()):
        if hasattr(cfg, k) and getattr(cfg, k) is not None:
            setattr(cfg, k, v)


def _hf_config41(model_type):
    cfg = _hf_config(model_type)
    _shrink(cfg)
    for sub in ("text_config", "vision_config"):
        sc = getattr(cfg, sub, None)
        if sc is not None and not isinstance(sc, dict):
            _shrink(sc)
            if getattr(sc, "pad_token_id", None) is not None and sc.pad_token_id >= 8000:
                sc.pad_token_id = 0
    return cfg


def _pair(model):
    """forward(input_ids, pixel_values) -> the first tensor (a two-tower model's logits per image)."""
    import torch.nn as nn

    class Pair(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.model = m

        def forward(self, input_ids, pixel_values):
            return self.model(input_ids=input_ids, pixel_values=pixel_values, return_dict=False)[0]
    return Pair(model)


def _pixel_shape(cfg, task):
    vision = getattr(cfg, "vision_config", None) if task == "zsi" else None
    h, w = _image_size(vision if vision is not None and not isinstance(vision, dict) else cfg)
    channels = int(getattr(cfg, "num_channels", 3) or 3)
    if task == "vid":
        return (int(getattr(cfg, "num_frames", 8) or 8), channels, h, w)
    return (channels, h, w)


def _session41_entry(model_type, task):
    auto, loss, labels, family = SESSION41_TASKS[task]

    def build():
        import transformers
        from validate.corpus import _PixelValues, _wrap_first, _wrap_logits, _wrap_seq2seq
        m = getattr(transformers, auto).from_config(_hf_config41(model_type))
        if task == "s2s":
            return _wrap_seq2seq(m)
        if task == "txt":
            return _wrap_logits(m)
        if task == "zsi":
            return _pair(m)
        return _wrap_first(_PixelValues(m))
    name = "sh_%s_%s" % (model_type, task)
    source = "transformers %s %s (small)" % (model_type, auto)
    if task == "s2s":
        return Entry(name, build, [InputSpec("input_ids", ("seq",), "int64", 8000)], "ce",
                     TargetSpec(("seq",), 8000), (4, 8), source, dims={"seq": 128},
                     output_axes={0: "batch", 1: "seq"}, needs="transformers", family=family, subdir="sample")
    if task == "txt":
        return Entry(name, build, [InputSpec("input_ids", ("seq",), "int64", 8000)], "sum", None, (8, 16), source,
                     dims={"seq": 128}, needs="transformers", family=family, subdir="sample")
    shape = _pixel_shape(_hf_config41(model_type), task)
    target = TargetSpec((), labels) if labels else None
    batches = (2, 4) if task == "vid" or max(shape[-2:]) > 256 else (8, 16)
    inputs = [InputSpec("input", shape)]
    dims = {}
    if task == "zsi":
        inputs = [InputSpec("input_ids", ("seq",), "int64", 8000), InputSpec("pixel_values", shape)]
        dims = {"seq": 64}
    return Entry(name, build, inputs, loss, target, batches, source, dims=dims, needs="transformers",
                 family=family, subdir="sample")


def _session41_candidates():
    out = []
    try:
        from transformers.models.auto import modeling_auto as ma
        for task, mapping in SESSION41_MAPPINGS.items():
            out += ["sh_%s_%s" % (t, task) for t in getattr(ma, mapping, {})]
    except ImportError:
        pass
    return out


def _forward_runs(entry, model):
    """Whether the model's forward runs on the meta device at the entry's smaller batch."""
    import torch
    from validate.loop import make_inputs
    try:
        with torch.device("meta"):
            model(*make_inputs(entry, 2, "meta"))
        return True
    except Exception:
        return False


def entry_of(name):
    if name.startswith("st_"):
        return _timm_entry(name[3:])
    if name.startswith("sv_"):
        return _tv_entry(name[3:])
    model_type, task = name[3:].rsplit("_", 1)
    return _hf_entry(model_type, task)


def _known():
    """Names every set holds already, earlier draws included (their committed results)."""
    import glob
    import json
    import os
    from validate import zoo
    from validate.corpus import CORPUS
    names = set(zoo.BY_NAME) | set(zoo.HOLDOUT_BY_NAME) | set(zoo.BLIND_BY_NAME) | {e.name for e in CORPUS}
    here = os.path.dirname(os.path.abspath(__file__))
    from validate.compare import open_results
    paths = glob.glob(os.path.join(here, "results", "sample*.jsonl"))
    paths += glob.glob(os.path.join(here, "results", "sample*.jsonl.xz"))  # the larger sets
    for path in paths:
        with open_results(path) as f:
            for line in f:
                model = json.loads(line).get("model", "")
                if model.startswith(("st_", "sh_", "sv_")):
                    names.add(model[3:])
    return names


def _candidates():
    import timm
    from transformers.models.auto import modeling_auto as ma
    out = ["st_" + n for n in timm.list_models()]
    out += ["sh_%s_lm" % t for t in ma.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES]
    out += ["sh_%s_cls" % t for t in ma.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES]
    out += ["sh_%s_img" % t for t in ma.MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES if t not in CORPUS_IMAGE_TYPES]
    return sorted(out + _session32_candidates() + _session41_candidates())


def _session32_candidates():
    """The pools added when transformers' language and image types ran out (each listed
    only where this machine's libraries have it)."""
    out = []
    try:
        from transformers.models.auto import modeling_auto as ma
        out += ["sh_%s_aud" % t for t in ma.MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES]
        out += ["sh_%s_seg" % t for t in ma.MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES]
    except (ImportError, AttributeError):
        pass
    try:
        from torchvision import models
        out += ["sv_" + n for n in models.list_models() if _tv_kind(n)]
    except (ImportError, AttributeError):
        pass
    return out


def _model_type_known(name, known, types):
    """An audio classifier or segmenter of a type a set holds whole (the corpus's
    `wav2vec2`, `whisper`) is not new; nor is a session-41 task's type that a set holds
    under any task (`bart_cls` makes `bart_s2s` a head on a known architecture)."""
    if not name.startswith("sh_"):
        return False
    model_type, task = name[3:].rsplit("_", 1)
    if task in ("aud", "seg"):
        return model_type in known
    if task in SESSION41_TASKS:
        return model_type in known or model_type in types
    return False


def _known_types(known):
    """Model types in the known names' `TYPE_TASK` spellings."""
    tasks = {"lm", "cls", "img", "aud", "seg"} | set(SESSION41_TASKS)
    return {k.rsplit("_", 1)[0] for k in known if "_" in k and k.rsplit("_", 1)[1] in tasks}


def _usable(name):
    try:
        e = entry_of(name)
        import torch
        with torch.device("meta"):
            m = e.build()
        if name.startswith("st_") and getattr(m, "num_classes", 1000) < 1000:
            # A timm backbone without a 1000-class head (session 20: sam2_hiera_tiny has
            # none) would take labels out of range: a device-side assert that also kills
            # the worker's next case.
            return False
        if sum(p.numel() for p in m.parameters()) > (MAX_PARAMS_TIMM if name.startswith("st_") else MAX_PARAMS):
            return False
        return name.rsplit("_", 1)[-1] not in SESSION41_TASKS or _forward_runs(e, m)
    except Exception:
        return False


def draw(seed, n):
    """N usable model names drawn with `seed`: timm and the other libraries in proportion
    2:1, each filling what the other cannot."""
    known = _known()
    types = _known_types(known)
    cands = [c for c in _candidates() if c[3:] not in known and not _model_type_known(c, known, types)]
    r = random.Random(seed)
    timm_c = [c for c in cands if c.startswith("st_")]
    other_c = [c for c in cands if not c.startswith("st_")]
    r.shuffle(timm_c)
    r.shuffle(other_c)
    out, rest = _take(other_c, n // 3)
    out += _take(timm_c, n - len(out))[0]
    # Since session 41 the other libraries also fill what timm cannot (blind36: 14 timm
    # names left, and the other pools were empty).
    return out + _take(rest, n - len(out))[0]


def _take(pool, k):
    """The first k usable names of pool, and the names after the last one looked at."""
    out = []
    for i, c in enumerate(pool):
        if len(out) >= k:
            return out, pool[i:]
        if _usable(c):
            out.append(c)
    return out, []


def entries(seed, n):
    return [entry_of(c) for c in draw(seed, n)]
