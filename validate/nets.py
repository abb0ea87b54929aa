"""Plain-PyTorch models of the zoo that are not in torchvision or transformers.

Written for torch 1.13 and 2.x alike (no scaled_dot_product_attention, no
torch.compile) so that the same module exports with either and the ONNX graph
shows every op that training keeps.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """Linear/ReLU/Dropout classifier."""

    def __init__(self, d_in=1024, hidden=(4096, 4096, 2048), n_classes=10, p=0.1):
        super().__init__()
        layers = []
        d = d_in
        for h in hidden:
            layers += [nn.Linear(d, h), nn.ReLU(inplace=True), nn.Dropout(p)]
            d = h
        layers.append(nn.Linear(d, n_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class TinyMLP(nn.Module):
    """A few thousand parameters: the TorchScript frontend's test model."""

    def __init__(self, d_in=32, hidden=64, n_classes=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def _conv_bn_relu(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    """Small U-Net: 4 levels, MaxPool down, ConvTranspose up, skip concat."""

    def __init__(self, in_ch=3, n_classes=5, base=32, depth=4):
        super().__init__()
        chs = [base * 2 ** i for i in range(depth + 1)]
        self.downs = nn.ModuleList()
        c = in_ch
        for ch in chs[:-1]:
            self.downs.append(_conv_bn_relu(c, ch))
            c = ch
        self.pool = nn.MaxPool2d(2)
        self.bottom = _conv_bn_relu(chs[-2], chs[-1])
        self.ups = nn.ModuleList()
        self.up_convs = nn.ModuleList()
        for ch_hi, ch in zip(reversed(chs[1:]), reversed(chs[:-1])):
            self.ups.append(nn.ConvTranspose2d(ch_hi, ch, 2, stride=2))
            self.up_convs.append(_conv_bn_relu(2 * ch, ch))
        self.head = nn.Conv2d(chs[0], n_classes, 1)

    def forward(self, x):
        skips = []
        for down in self.downs:
            x = down(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottom(x)
        for up, conv, skip in zip(self.ups, self.up_convs, reversed(skips)):
            x = conv(torch.cat([up(x), skip], dim=1))
        return self.head(x)


class ConvAutoencoder(nn.Module):
    """Image-to-image regression (the zoo's `--loss mse` model)."""

    def __init__(self, ch=3, base=32):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(ch, base, 3, stride=2, padding=1), nn.BatchNorm2d(base), nn.ReLU(inplace=True),
            nn.Conv2d(base, base * 2, 3, stride=2, padding=1), nn.BatchNorm2d(base * 2), nn.ReLU(inplace=True),
            nn.Conv2d(base * 2, base * 4, 3, stride=2, padding=1), nn.BatchNorm2d(base * 4), nn.ReLU(inplace=True),
        )
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(base * 4, base * 2, 4, stride=2, padding=1), nn.BatchNorm2d(base * 2), nn.ReLU(inplace=True),
            nn.ConvTranspose2d(base * 2, base, 4, stride=2, padding=1), nn.BatchNorm2d(base), nn.ReLU(inplace=True),
            nn.ConvTranspose2d(base, ch, 4, stride=2, padding=1), nn.Sigmoid(),
        )

    def forward(self, x):
        return self.dec(self.enc(x))


class LSTMLM(nn.Module):
    """Embedding + 2-layer nn.LSTM (cuDNN on the GPU) + Linear over the vocabulary."""

    def __init__(self, vocab=10000, d_emb=512, hidden=512, layers=2, p=0.1):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_emb)
        self.drop = nn.Dropout(p)
        self.lstm = nn.LSTM(d_emb, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        h, _ = self.lstm(self.drop(self.emb(tokens)))
        return self.head(self.drop(h))


class TransformerClassifier(nn.Module):
    """nn.TransformerEncoder (batch_first, dropout) over token embeddings, mean-pooled."""

    def __init__(self, vocab=16000, d_model=512, nhead=8, layers=6, d_ff=2048, max_len=512,
                 n_classes=10, p=0.1):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_ff, dropout=p, batch_first=True)
        # enable_nested_tensor only matters for padding masks; keep the plain path.
        try:
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        except TypeError:
            self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, tokens):
        t = tokens.shape[1]
        pos = torch.arange(t, device=tokens.device)
        h = self.emb(tokens) + self.pos(pos)
        h = self.encoder(h)
        return self.head(self.norm(h.mean(dim=1)))


class SelfAttention(nn.Module):
    """Multi-head attention written out (matmul, mask, softmax, dropout, matmul)."""

    def __init__(self, d, n_head, p, causal, max_len):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.attn_drop = nn.Dropout(p)
        self.causal = causal
        if causal:
            mask = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
            self.register_buffer("mask", mask.view(1, 1, max_len, max_len), persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.n_head
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.n_head, hd).transpose(1, 2)
        k = k.view(b, t, self.n_head, hd).transpose(1, 2)
        v = v.view(b, t, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        if self.causal:
            att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        att = self.attn_drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    """Transformer layer; pre-LN (GPT) or post-LN (BERT)."""

    def __init__(self, d, n_head, p, causal, max_len, pre_ln):
        super().__init__()
        self.pre_ln = pre_ln
        self.ln1 = nn.LayerNorm(d)
        self.attn = SelfAttention(d, n_head, p, causal, max_len)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(p)

    def forward(self, x):
        if self.pre_ln:
            x = x + self.drop(self.attn(self.ln1(x)))
            return x + self.drop(self.mlp(self.ln2(x)))
        x = self.ln1(x + self.drop(self.attn(x)))
        return self.ln2(x + self.drop(self.mlp(x)))


class GPTMini(nn.Module):
    """GPT-style decoder: token + learned position embeddings, pre-LN causal blocks, LM head."""

    def __init__(self, vocab=32000, d=512, n_head=8, layers=6, max_len=256, p=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList([Block(d, n_head, p, True, max_len, True) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        pos = torch.arange(t, device=tokens.device)
        h = self.drop(self.tok(tokens) + self.pos(pos))
        for blk in self.blocks:
            h = blk(h)
        return self.head(self.ln_f(h))


class BERTMini(nn.Module):
    """BERT-style encoder: embeddings + LayerNorm, post-LN blocks, tanh pooler on [CLS], classifier."""

    def __init__(self, vocab=30522, d=512, n_head=8, layers=6, max_len=512, n_classes=2, p=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm(d)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList([Block(d, n_head, p, False, max_len, False) for _ in range(layers)])
        self.pool = nn.Linear(d, d)
        self.head = nn.Linear(d, n_classes)

    def forward(self, tokens):
        t = tokens.shape[1]
        pos = torch.arange(t, device=tokens.device)
        h = self.drop(self.ln(self.tok(tokens) + self.pos(pos)))
        for blk in self.blocks:
            h = blk(h)
        pooled = torch.tanh(self.pool(h[:, 0]))
        return self.head(self.drop(pooled))


class LogitsOnly(nn.Module):
    """Wraps a transformers model so that forward(input_ids) returns the logits tensor alone."""

    def __init__(self, model, use_cache_flag):
        super().__init__()
        self.model = model
        self.use_cache_flag = use_cache_flag

    def forward(self, input_ids):
        if self.use_cache_flag:
            out = self.model(input_ids=input_ids, use_cache=False, return_dict=False)
        else:
            out = self.model(input_ids=input_ids, return_dict=False)
        return out[0]
