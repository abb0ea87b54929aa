"""Models of the corpus written out (validate/corpus.py): mechanisms the libraries'
models do not cover, as a user would write them."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class AudioFirst(nn.Module):
    """A torchaudio model whose forward takes (x) and may return a tuple: the first tensor."""

    def __init__(self, m):
        super().__init__()
        self.model = m

    def forward(self, x):
        out = self.model(x)
        return out[0] if isinstance(out, (tuple, list)) else out


class DCGANGenerator(nn.Module):
    def __init__(self, nz=100, ngf=64, nc=3):
        super().__init__()
        self.net = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class DCGANDiscriminator(nn.Module):
    def __init__(self, ndf=64, nc=3):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 2, 4, 1, 0, bias=False), nn.Flatten())

    def forward(self, x):
        return self.net(x)


class _ResBlock(nn.Module):
    def __init__(self, cin, cout, groups=8):
        super().__init__()
        self.n1 = nn.GroupNorm(groups, cin)
        self.c1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.n2 = nn.GroupNorm(groups, cout)
        self.c2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        h = self.c1(F.silu(self.n1(x)))
        h = self.c2(F.silu(self.n2(h)))
        return h + self.skip(x)


class _Attn2d(nn.Module):
    def __init__(self, ch, heads=4):
        super().__init__()
        self.norm = nn.GroupNorm(8, ch)
        self.qkv = nn.Conv2d(ch, ch * 3, 1)
        self.proj = nn.Conv2d(ch, ch, 1)
        self.heads = heads

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, self.heads, c // self.heads, h * w).unbind(1)
        att = torch.softmax(q.transpose(-1, -2) @ k / math.sqrt(c // self.heads), dim=-1)
        out = (v @ att.transpose(-1, -2)).reshape(b, c, h, w)
        return x + self.proj(out)


class DiffusionUNet(nn.Module):
    """A DDPM-style UNet: GroupNorm + SiLU residual blocks, self-attention at 16x16."""

    def __init__(self, base=64):
        super().__init__()
        self.inc = nn.Conv2d(3, base, 3, padding=1)
        self.d1 = _ResBlock(base, base)
        self.down1 = nn.Conv2d(base, base, 3, stride=2, padding=1)
        self.d2 = _ResBlock(base, base * 2)
        self.down2 = nn.Conv2d(base * 2, base * 2, 3, stride=2, padding=1)
        self.d3 = _ResBlock(base * 2, base * 2)
        self.att = _Attn2d(base * 2)
        self.mid = _ResBlock(base * 2, base * 2)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.u2 = _ResBlock(base * 4, base)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.u1 = _ResBlock(base * 2, base)
        self.out = nn.Conv2d(base, 3, 3, padding=1)

    def forward(self, x):
        h1 = self.d1(self.inc(x))
        h2 = self.d2(self.down1(h1))
        h3 = self.att(self.d3(self.down2(h2)))
        m = self.mid(h3)
        u = self.u2(torch.cat([self.up2(m), h2], 1))
        u = self.u1(torch.cat([self.up1(u), h1], 1))
        return self.out(F.silu(u))


class WaveNet(nn.Module):
    """Gated residual blocks of causal dilated Conv1d (F.pad on the left, then the conv)."""

    def __init__(self, ch=32, res=64, layers=8, kernel=2):
        super().__init__()
        self.inp = nn.Conv1d(ch, res, 1)
        self.filt = nn.ModuleList([nn.Conv1d(res, res, kernel, dilation=2 ** i) for i in range(layers)])
        self.gate = nn.ModuleList([nn.Conv1d(res, res, kernel, dilation=2 ** i) for i in range(layers)])
        self.proj = nn.ModuleList([nn.Conv1d(res, res, 1) for _ in range(layers)])
        self.kernel = kernel
        self.out = nn.Conv1d(res, ch, 1)

    def forward(self, x):
        h = self.inp(x)
        for i, (f, g, p) in enumerate(zip(self.filt, self.gate, self.proj)):
            pad = (self.kernel - 1) * 2 ** i
            hp = F.pad(h, (pad, 0))
            h = h + p(torch.tanh(f(hp)) * torch.sigmoid(g(hp)))
        return self.out(h)


class Conv3DNet(nn.Module):
    def __init__(self, base=16, classes=5):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv3d(1, base, 3, padding=1), nn.BatchNorm3d(base), nn.ReLU(inplace=True),
            nn.Conv3d(base, base * 2, 3, stride=2, padding=1), nn.BatchNorm3d(base * 2), nn.ReLU(inplace=True),
            nn.Conv3d(base * 2, base * 2, 3, padding=2, dilation=2), nn.InstanceNorm3d(base * 2, affine=True),
            nn.GELU(),
            nn.Conv3d(base * 2, base * 4, 3, stride=2, padding=1), nn.BatchNorm3d(base * 4), nn.ReLU(inplace=True),
            nn.MaxPool3d(2), nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(base * 4, classes))

    def forward(self, x):
        return self.net(x)


class AtrousSeg(nn.Module):
    """DeepLab-like: a strided stem, dilated residual convs, an ASPP head, bilinear up-sampling."""

    def __init__(self, base=64, classes=6):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, base, 3, stride=2, padding=1), nn.BatchNorm2d(base), nn.ReLU(True),
                                  nn.Conv2d(base, base, 3, stride=2, padding=1), nn.BatchNorm2d(base), nn.ReLU(True))
        self.body = nn.ModuleList([nn.Sequential(nn.Conv2d(base, base, 3, padding=d, dilation=d),
                                                 nn.BatchNorm2d(base), nn.ReLU(True)) for d in (2, 4, 8)])
        self.aspp = nn.ModuleList([nn.Conv2d(base, base // 2, 3 if d > 1 else 1, padding=d if d > 1 else 0,
                                             dilation=d) for d in (1, 6, 12, 18)])
        self.head = nn.Conv2d(base * 2, classes, 1)

    def forward(self, x):
        size = x.shape[-2:]
        h = self.stem(x)
        for blk in self.body:
            h = h + blk(h)
        h = torch.cat([a(h) for a in self.aspp], 1)
        return F.interpolate(self.head(h), size=size, mode="bilinear", align_corners=False)


class _RelBias(nn.Module):
    """T5's bucketed relative position bias, shared by a stack."""

    def __init__(self, heads, buckets=32, max_dist=128, bidirectional=True):
        super().__init__()
        self.emb = nn.Embedding(buckets, heads)
        self.buckets, self.max_dist, self.bidir = buckets, max_dist, bidirectional

    def forward(self, q_len, k_len, device):
        ctx = torch.arange(q_len, device=device)[:, None]
        mem = torch.arange(k_len, device=device)[None, :]
        rel = mem - ctx
        n = self.buckets
        ret = 0
        if self.bidir:
            n //= 2
            ret = (rel > 0).long() * n
            rel = rel.abs()
        else:
            rel = -torch.min(rel, torch.zeros_like(rel))
        exact = n // 2
        large = exact + (torch.log(rel.float().clamp(min=1) / exact) / math.log(self.max_dist / exact)
                         * (n - exact)).long()
        large = torch.min(large, torch.full_like(large, n - 1))
        bucket = ret + torch.where(rel < exact, rel, large)
        return self.emb(bucket).permute(2, 0, 1).unsqueeze(0)  # [1, H, q, k]


class _EagerAttn(nn.Module):
    def __init__(self, d, heads, p=0.1):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.h = heads
        self.drop = nn.Dropout(p)

    def forward(self, x, mem, bias, causal):
        b, t, d = x.shape
        s = mem.shape[1]
        q = self.q(x).view(b, t, self.h, d // self.h).transpose(1, 2)
        k = self.k(mem).view(b, s, self.h, d // self.h).transpose(1, 2)
        v = self.v(mem).view(b, s, self.h, d // self.h).transpose(1, 2)
        scores = q @ k.transpose(-1, -2)
        if bias is not None:
            scores = scores + bias
        if causal:
            mask = torch.ones(t, s, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        att = self.drop(torch.softmax(scores.float(), dim=-1).type_as(scores))
        return self.o((att @ v).transpose(1, 2).reshape(b, t, d))


class _Layer(nn.Module):
    def __init__(self, d, heads, cross):
        super().__init__()
        self.n1 = nn.LayerNorm(d)
        self.att = _EagerAttn(d, heads)
        self.cross = _EagerAttn(d, heads) if cross else None
        self.n2 = nn.LayerNorm(d) if cross else None
        self.n3 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Dropout(0.1), nn.Linear(4 * d, d))

    def forward(self, x, mem, bias, causal):
        h = self.n1(x)
        x = x + self.att(h, h, bias, causal)
        if self.cross is not None:
            x = x + self.cross(self.n2(x), mem, None, False)
        return x + self.ff(self.n3(x))


class RelPosEncDec(nn.Module):
    """An encoder-decoder with T5-style relative position bias, attention written out."""

    def __init__(self, vocab=8000, d=256, heads=8, layers=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc_bias = _RelBias(heads, bidirectional=True)
        self.dec_bias = _RelBias(heads, bidirectional=False)
        self.enc = nn.ModuleList([_Layer(d, heads, False) for _ in range(layers)])
        self.dec = nn.ModuleList([_Layer(d, heads, True) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.emb(tokens)
        eb = self.enc_bias(t, t, tokens.device)
        mem = x
        for layer in self.enc:
            mem = layer(mem, mem, eb, False)
        db = self.dec_bias(t, t, tokens.device)
        y = x
        for layer in self.dec:
            y = layer(y, mem, db, True)
        return self.head(self.norm(y))


# ---------------------------------------------------------------- random models (validate/randnet.py)

class ChannelLayerNorm(nn.Module):
    """LayerNorm over the channel dimension of an N-D feature map (ConvNeXt's channels-first LN)."""

    def __init__(self, ch):
        super().__init__()
        self.ln = nn.LayerNorm(ch)

    def forward(self, x):
        return self.ln(x.movedim(1, -1)).movedim(-1, 1)


class _SE(nn.Module):
    def __init__(self, nd, ch, red):
        super().__init__()
        conv = [nn.Conv1d, nn.Conv2d, nn.Conv3d][nd - 1]
        self.pool = [nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d][nd - 1](1)
        self.fc1 = conv(ch, max(ch // red, 4), 1)
        self.fc2 = conv(max(ch // red, 4), ch, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.fc2(F.relu(self.fc1(self.pool(x)))))


class _Block(nn.Module):
    def __init__(self, body, residual):
        super().__init__()
        self.body = body
        self.residual = residual

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


def _conv_out(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


class RandConvNet(nn.Module):
    def __init__(self, spec):
        super().__init__()
        from validate.randnet import _act, _norm
        nd = spec["nd"]
        conv = [nn.Conv1d, nn.Conv2d, nn.Conv3d][nd - 1]
        tconv = [nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d][nd - 1]
        size, ch = spec["size"], spec["cin"]
        layers = []
        for b in spec["blocks"]:
            kind = b["kind"]
            if kind in ("conv", "tconv"):
                cin = ch
                groups = b["groups"] if cin % b["groups"] == 0 and b["cout"] % b["groups"] == 0 else 1
                cout = cin if b["groups"] == b["cin"] and b["groups"] > 1 else b["cout"]
                if b["groups"] == b["cin"] and b["groups"] > 1:
                    groups = cin
                if kind == "conv":
                    pad = b["pad"]
                    p = 0 if pad == "same" else pad
                    mode = b["pad_mode"]
                    if mode == "reflect" and p >= size:
                        mode = "zeros"
                    out = size if pad == "same" else _conv_out(size, b["k"], b["stride"], p, b["dil"])
                    if out < 1:
                        continue
                    m = conv(cin, cout, b["k"], stride=b["stride"], padding=pad, dilation=b["dil"], groups=groups,
                             bias=b["bias"], padding_mode=mode)
                else:
                    out = (size - 1) * b["stride"] - 2 * b["pad"] + b["dil"] * (b["k"] - 1) + b["outpad"] + 1
                    if out < 1 or out > 4 * spec["size"]:
                        continue
                    m = tconv(cin, cout, b["k"], stride=b["stride"], padding=b["pad"], output_padding=b["outpad"],
                              dilation=b["dil"], groups=groups, bias=b["bias"])
                body = [m, _norm(b["norm"], nd, cout), _act(b["act"])]
                if b["dropout"]:
                    body.append(nn.Dropout(b["dropout"]))
                layers.append(_Block(nn.Sequential(*body), b["residual"] and cout == cin and out == size))
                size, ch = out, cout
            elif kind == "pool":
                if size < 4:
                    continue
                pool = {"max": [nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d],
                        "avg": [nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d]}[b["op"]][nd - 1]
                layers.append(pool(b["k"], stride=b["stride"]))
                size = (size - b["k"]) // b["stride"] + 1
            elif kind == "up":
                if size > spec["size"]:
                    continue
                mode = b["mode"] if b["mode"] == "nearest" else ["linear", "bilinear", "trilinear"][nd - 1]
                layers.append(nn.Upsample(scale_factor=2, mode=mode))
                size *= 2
            else:
                layers.append(_SE(nd, ch, b["red"]))
        self.features = nn.Sequential(*layers)
        self.pool = [nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d][nd - 1](1)
        self.head = nn.Linear(ch, spec["classes"])

    def forward(self, x):
        return self.head(self.pool(self.features(x)).flatten(1))


def _rms(d):
    if hasattr(nn, "RMSNorm"):
        return nn.RMSNorm(d)
    return _RMSNorm(d)


class _RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


class _RandAttn(nn.Module):
    def __init__(self, s):
        super().__init__()
        d, h, kv = s["d"], s["heads"], s["kv"]
        self.h, self.kv, self.hd = h, kv, d // h
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, kv * self.hd)
        self.v = nn.Linear(d, kv * self.hd)
        self.o = nn.Linear(d, d)
        self.causal, self.eager = s["causal"], s["attn"] == "eager" or not hasattr(F, "scaled_dot_product_attention")
        self.p = s["dropout"]
        self.rel = nn.Embedding(2 * 512 - 1, h) if s["bias"] else None

    def forward(self, x, pad):
        b, t, d = x.shape
        q = self.q(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        if self.kv != self.h:
            k = k.repeat_interleave(self.h // self.kv, dim=1)
            v = v.repeat_interleave(self.h // self.kv, dim=1)
        bias = None
        if self.rel is not None:
            pos = torch.arange(t, device=x.device)
            bias = self.rel(pos[None, :] - pos[:, None] + 511).permute(2, 0, 1).unsqueeze(0)
        mask = None
        if self.causal and (bias is not None or pad is not None or self.eager):
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        if pad is not None:
            mask = pad[:, None, None, :] if mask is None else (mask | pad[:, None, None, :])
        if self.eager:
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
            if bias is not None:
                scores = scores + bias
            if mask is not None:
                scores = scores.masked_fill(mask, float("-inf"))
            att = F.dropout(torch.softmax(scores, dim=-1), self.p, self.training)
            out = att @ v
        else:
            attn_mask = None
            if bias is not None:
                attn_mask = bias.to(q.dtype)
                if mask is not None:
                    attn_mask = attn_mask.masked_fill(mask, float("-inf"))
            elif mask is not None:
                attn_mask = ~mask
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=self.p if self.training else 0.0,
                                                 is_causal=self.causal and attn_mask is None)
        return self.o(out.transpose(1, 2).reshape(b, t, d))


class _RandFFN(nn.Module):
    def __init__(self, s):
        super().__init__()
        d, m = s["d"], s["d"] * s["ff_mult"]
        self.kind = s["ffn"]
        self.w1 = nn.Linear(d, m)
        self.w3 = nn.Linear(d, m) if self.kind == "swiglu" else None
        self.w2 = nn.Linear(m, d)
        self.drop = nn.Dropout(s["dropout"])

    def forward(self, x):
        if self.kind == "swiglu":
            h = F.silu(self.w1(x)) * self.w3(x)
        elif self.kind == "gelu":
            h = F.gelu(self.w1(x))
        else:
            h = F.relu(self.w1(x))
        return self.w2(self.drop(h))


class _RandLayer(nn.Module):
    def __init__(self, s):
        super().__init__()
        norm = (lambda: nn.LayerNorm(s["d"])) if s["norm"] == "layer" else (lambda: _rms(s["d"]))
        self.n1, self.n2 = norm(), norm()
        self.att, self.ffn = _RandAttn(s), _RandFFN(s)
        self.pre = s["pre_norm"]

    def forward(self, x, pad):
        if self.pre:
            x = x + self.att(self.n1(x), pad)
            return x + self.ffn(self.n2(x))
        x = self.n1(x + self.att(x, pad))
        return self.n2(x + self.ffn(x))


class RandTransformer(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.emb = nn.Embedding(s["vocab"], s["d"])
        self.pos = nn.Embedding(512, s["d"])
        self.layers = nn.ModuleList([_RandLayer(s) for _ in range(s["layers"])])
        self.norm = nn.LayerNorm(s["d"])
        self.lm = s["head"] == "lm"
        self.head = nn.Linear(s["d"], s["vocab"] if self.lm else 10, bias=False)
        self.pad_mask = s["pad_mask"]

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.emb(tokens) + self.pos(torch.arange(t, device=tokens.device))
        pad = tokens == 0 if self.pad_mask else None
        for layer in self.layers:
            x = layer(x, pad)
        x = self.norm(x)
        return self.head(x if self.lm else x.mean(1))


class RandRNN(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.emb = nn.Embedding(s["vocab"], s["hidden"]) if s["tokens"] else None
        d_in = s["hidden"] if s["tokens"] else s["feat"]
        cell = nn.LSTM if s["cell"] == "lstm" else nn.GRU
        self.rnn = cell(d_in, s["hidden"], num_layers=s["layers"], batch_first=True, bidirectional=s["bidir"],
                        dropout=s["dropout"] if s["layers"] > 1 else 0.0)
        out = s["hidden"] * (2 if s["bidir"] else 1)
        self.lm = s["head"] == "lm"
        self.head = nn.Linear(out, s["vocab"] if self.lm else 10)

    def forward(self, x):
        if self.emb is not None:
            x = self.emb(x)
        y, _ = self.rnn(x)
        return self.head(y if self.lm else y[:, -1])


class RandMLP(nn.Module):
    def __init__(self, s):
        super().__init__()
        from validate.randnet import _act
        layers, d = [], s["d_in"]
        for h in s["hidden"]:
            layers.append(nn.Linear(d, h))
            if s["norm"] == "batch":
                layers.append(nn.BatchNorm1d(h))
            elif s["norm"] == "layer":
                layers.append(nn.LayerNorm(h))
            layers.append(_act(s["act"]))
            if s["dropout"]:
                layers.append(nn.Dropout(s["dropout"]))
            d = h
        layers.append(nn.Linear(d, s["classes"]))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)
