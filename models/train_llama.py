#!/usr/bin/env python3
"""Trains the small llama of models/kjv-llama-q8_0.gguf on the King James Bible.

    python3 models/train_llama.py KJV.txt OUT-f32.gguf [--steps N] [--seed S]

(the shipped file: --steps 4000 --seed 1; see models/README.md)

KJV.txt is the output of `bible 'Gen1:1-Rev22:21'` (Debian's bible-kjv, public
domain). The script
  1. cleans it to one verse per line (no chapter titles or verse numbers);
  2. learns a SentencePiece-style vocabulary by byte-pair merges over words
     ("▁" marks a word start): 3 control tokens, 256 byte tokens <0xNN>
     (llama.cpp's byte fallback), the corpus' characters, then merged pieces
     scored by merge order (earlier = higher), 1024 tokens in all;
  3. tokenizes the corpus as llama.cpp's SPM tokenizer does (highest-scoring
     adjacent pair merged first; pieces never span a word start, so words can
     be tokenized one at a time);
  4. trains a llama (RMSNorm, RoPE on adjacent pairs as llama.cpp's "llama"
     architecture expects, grouped-query attention, SwiGLU) with AdamW;
  5. writes an F32 GGUF with the pure-Python gguf package (llama.cpp's
     gguf-py on PYTHONPATH).
llama.cpp's quantizer then makes the shipped Q8_0 file (models/README.md).
Needs torch and numpy; a GPU makes it a few minutes.
"""
import argparse
import collections
import math
import re
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

DIM, LAYERS, HEADS, KV_HEADS, FF, CTX, VOCAB = 256, 4, 4, 2, 768, 256, 1024
SP = "\u2581"


def clean(raw):
    verses, cur = [], []
    for line in raw.splitlines():
        if not line.strip():
            continue
        m = re.match(r"^\s+\d+ (.*)$", line)
        if m:
            if cur:
                verses.append(" ".join(cur))
            cur = [m.group(1).strip()]
        elif re.match(r"^\S.* \d+$", line) and not cur:
            continue  # a chapter title before its first verse
        elif re.match(r"^[1-3]? ?[A-Z][a-z]+( of [A-Z][a-z]+)? \d+$", line.strip()):
            if cur:
                verses.append(" ".join(cur))
            cur = []
        else:
            cur.append(line.strip())
    if cur:
        verses.append(" ".join(cur))
    return "\n".join(verses) + "\n"


def words_of(text):
    """The units tokenized alone: '▁word' pieces and newlines (llama.cpp's SPM
    escapes spaces to ▁ and adds one before the text)."""
    out = []
    for line in text.split("\n"):
        for w in line.split(" "):
            if w:
                out.append(SP + w)
        out.append("\n")
    return out


def learn_vocab(text):
    chars = sorted(set(text.replace(" ", "")) | {SP})
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    base = [c for c in chars]
    counts = collections.Counter(words_of(text))
    seqs = {w: list(w) for w in counts}
    merges = []
    n_merge = VOCAB - len(pieces) - len(base)
    for _ in range(n_merge):
        pairs = collections.Counter()
        for w, c in counts.items():
            s = seqs[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(a + b)
        for w in counts:
            s = seqs[w]
            i, t = 0, []
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    t.append(a + b)
                    i += 2
                else:
                    t.append(s[i])
                    i += 1
            seqs[w] = t
    tokens = pieces + base + merges
    scores = [0.0] * len(pieces) + [-1e4] * len(base) + [-float(i) for i in range(len(merges))]
    types = [2, 3, 3] + [6] * 256 + [1] * (len(base) + len(merges))
    return tokens, scores, types


def spm_tokenize_word(w, index, scores):
    syms = list(w)
    while True:
        best, at = None, -1
        for i in range(len(syms) - 1):
            t = index.get(syms[i] + syms[i + 1])
            if t is not None and (best is None or scores[t] > scores[best]):
                best, at = t, i
        if best is None:
            break
        syms[at:at + 2] = [syms[at] + syms[at + 1]]
    ids = []
    for s in syms:
        t = index.get(s)
        if t is None:
            ids += [3 + b for b in s.encode("utf-8")]
        else:
            ids.append(t)
    return ids


class Llama(torch.nn.Module):
    def __init__(self):
        super().__init__()
        D = DIM // HEADS
        self.tok = torch.nn.Embedding(VOCAB, DIM)
        self.layers = torch.nn.ModuleList()
        for _ in range(LAYERS):
            L = torch.nn.Module()
            L.attn_norm = torch.nn.Parameter(torch.ones(DIM))
            L.wq = torch.nn.Linear(DIM, HEADS * D, bias=False)
            L.wk = torch.nn.Linear(DIM, KV_HEADS * D, bias=False)
            L.wv = torch.nn.Linear(DIM, KV_HEADS * D, bias=False)
            L.wo = torch.nn.Linear(HEADS * D, DIM, bias=False)
            L.ffn_norm = torch.nn.Parameter(torch.ones(DIM))
            L.wg = torch.nn.Linear(DIM, FF, bias=False)
            L.wu = torch.nn.Linear(DIM, FF, bias=False)
            L.wd = torch.nn.Linear(FF, DIM, bias=False)
            self.layers.append(L)
        self.norm = torch.nn.Parameter(torch.ones(DIM))
        self.out = torch.nn.Linear(DIM, VOCAB, bias=False)
        inv = 10000.0 ** (-torch.arange(0, D, 2).float() / D)
        ang = torch.arange(CTX).float()[:, None] * inv[None, :]
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    @staticmethod
    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

    def rope(self, x):  # x [B, T, H, D], adjacent pairs (x[2i], x[2i+1])
        T = x.shape[1]
        c, s = self.cos[:T][None, :, None, :], self.sin[:T][None, :, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)

    def forward(self, ids):
        B, T = ids.shape
        D = DIM // HEADS
        x = self.tok(ids)
        for L in self.layers:
            h = self.rms(x, L.attn_norm)
            q = self.rope(L.wq(h).view(B, T, HEADS, D)).transpose(1, 2)
            k = self.rope(L.wk(h).view(B, T, KV_HEADS, D)).transpose(1, 2)
            v = L.wv(h).view(B, T, KV_HEADS, D).transpose(1, 2)
            k = k.repeat_interleave(HEADS // KV_HEADS, dim=1)
            v = v.repeat_interleave(HEADS // KV_HEADS, dim=1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + L.wo(a.transpose(1, 2).reshape(B, T, DIM))
            h = self.rms(x, L.ffn_norm)
            x = x + L.wd(F.silu(L.wg(h)) * L.wu(h))
        return self.out(self.rms(x, self.norm))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    t0 = time.time()
    text = clean(open(a.corpus, encoding="utf-8").read())
    tokens, scores, types = learn_vocab(text[: 1 << 20])
    index = {t: i for i, t in enumerate(tokens) if types[i] == 1}
    cache, ids = {}, [1]
    for w in words_of(text):
        if w not in cache:
            cache[w] = spm_tokenize_word(w, index, scores)
        ids += cache[w]
    data = torch.tensor(ids, dtype=torch.long)
    print(f"corpus {len(text)} chars, {len(ids)} tokens, vocab {len(tokens)}, {time.time() - t0:.0f} s", flush=True)
    n_val = len(ids) // 50
    train, val = data[:-n_val], data[-n_val:]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = Llama().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.95), weight_decay=0.1)
    B = 64

    def batch(src):
        i = torch.randint(0, len(src) - CTX, (B,))
        x = torch.stack([src[j:j + CTX] for j in i.tolist()])
        y = torch.stack([src[j + 1:j + CTX + 1] for j in i.tolist()])
        x[:, 0] = 1  # every window starts at BOS, as a llama.cpp prompt does
        return x.to(dev), y.to(dev)

    for step in range(a.steps):
        lr = 2e-3 * min(1.0, (step + 1) / 200) * 0.5 * (1 + math.cos(math.pi * step / a.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch(train)
        with torch.autocast(device_type=dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
            loss = F.cross_entropy(model(x).float().view(-1, VOCAB), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 500 == 0 or step == a.steps - 1:
            with torch.no_grad():
                vx, vy = batch(val)
                vl = F.cross_entropy(model(vx).float().view(-1, VOCAB), vy.view(-1)).item()
            print(f"step {step} loss {loss.item():.3f} val {vl:.3f} ({time.time() - t0:.0f} s)", flush=True)

    import gguf
    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("pxl kjv-llama")
    w.add_context_length(CTX)
    w.add_embedding_length(DIM)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(DIM // HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    m = model.float().cpu()
    f = lambda t: t.detach().numpy().astype(np.float32)
    w.add_tensor("token_embd.weight", f(m.tok.weight))
    for i, L in enumerate(m.layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", f(L.attn_norm))
        w.add_tensor(p + "attn_q.weight", f(L.wq.weight))
        w.add_tensor(p + "attn_k.weight", f(L.wk.weight))
        w.add_tensor(p + "attn_v.weight", f(L.wv.weight))
        w.add_tensor(p + "attn_output.weight", f(L.wo.weight))
        w.add_tensor(p + "ffn_norm.weight", f(L.ffn_norm))
        w.add_tensor(p + "ffn_gate.weight", f(L.wg.weight))
        w.add_tensor(p + "ffn_up.weight", f(L.wu.weight))
        w.add_tensor(p + "ffn_down.weight", f(L.wd.weight))
    w.add_tensor("output_norm.weight", f(m.norm))
    w.add_tensor("output.weight", f(m.out.weight))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {a.out} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
