"""The Llama decoder of models/llama.json, written out in PyTorch for training.

It computes what graphrun's graph computes, op for op, so the trained weights can be written to
GGUF as they are:
  embedding -> repeat(n_layer){ rmsnorm, q/k/v matmuls, rope, attention (GQA), o matmul, add,
  rmsnorm, gate/up matmuls, swiglu, down matmul, add } -> rmsnorm -> output matmul.
RoPE rotates *consecutive* pairs (x[2i], x[2i+1]), ggml's "normal" mode used for llama, so the
q/k weights need no permutation on export (Hugging Face checkpoints rotate halves instead).
"""
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaShape:
    vocab: int = 2048
    n_embd: int = 192
    n_layer: int = 4
    n_head: int = 6
    n_head_kv: int = 2
    n_ff: int = 512
    n_ctx: int = 256
    rope_base: float = 10000.0
    rms_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):  # x (..., dim)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(shape: LlamaShape, n_pos: int):
    """cos, sin of shape (n_pos, head_dim/2): angle = pos * base^(-2i/head_dim)."""
    i = torch.arange(0, shape.head_dim, 2, dtype=torch.float64)
    inv_freq = shape.rope_base ** (-i / shape.head_dim)
    angles = torch.arange(n_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return angles.cos().float(), angles.sin().float()


def apply_rope(x, cos, sin):
    """x (batch, heads, T, head_dim); rotates the pairs (x[2i], x[2i+1]) by angle[t, i]."""
    pairs = x.unflatten(-1, (-1, 2))
    x0, x1 = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
    return rotated.flatten(-2)


class Block(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.s = s
        kv_dim = s.n_head_kv * s.head_dim
        self.attn_norm = RMSNorm(s.n_embd, s.rms_eps)
        self.wq = nn.Linear(s.n_embd, s.n_embd, bias=False)
        self.wk = nn.Linear(s.n_embd, kv_dim, bias=False)
        self.wv = nn.Linear(s.n_embd, kv_dim, bias=False)
        self.wo = nn.Linear(s.n_embd, s.n_embd, bias=False)
        self.ffn_norm = RMSNorm(s.n_embd, s.rms_eps)
        self.w_gate = nn.Linear(s.n_embd, s.n_ff, bias=False)
        self.w_up = nn.Linear(s.n_embd, s.n_ff, bias=False)
        self.w_down = nn.Linear(s.n_ff, s.n_embd, bias=False)

    def forward(self, x, cos, sin):  # x (B, T, n_embd)
        s = self.s
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, s.n_head, s.head_dim).transpose(1, 2)     # (B, n_head, T, hd)
        k = self.wk(h).view(B, T, s.n_head_kv, s.head_dim).transpose(1, 2)  # (B, n_head_kv, T, hd)
        v = self.wv(h).view(B, T, s.n_head_kv, s.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        group = s.n_head // s.n_head_kv  # query head h reads kv head h // group, as llama.cpp does
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-2, -1)) / s.head_dim ** 0.5               # (B, n_head, T, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = scores.masked_fill(causal, float("-inf")).softmax(-1) @ v       # (B, n_head, T, hd)
        x = x + self.wo(att.transpose(1, 2).reshape(B, T, s.n_embd))
        h = self.ffn_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Llama(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.s = s
        self.tok_embd = nn.Embedding(s.vocab, s.n_embd)
        self.blocks = nn.ModuleList(Block(s) for _ in range(s.n_layer))
        self.out_norm = RMSNorm(s.n_embd, s.rms_eps)
        self.output = nn.Linear(s.n_embd, s.vocab, bias=False)
        cos, sin = rope_tables(s, s.n_ctx)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init)
        for block in self.blocks:  # scale residual-branch outputs by depth, as GPT-2 does
            for w in (block.wo.weight, block.w_down.weight):
                nn.init.normal_(w, std=0.02 / (2 * s.n_layer) ** 0.5)

    @staticmethod
    def _init(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, tokens):  # tokens (B, T) -> logits (B, T, vocab)
        T = tokens.shape[1]
        x = self.tok_embd(tokens)
        cos, sin = self.rope_cos[:T], self.rope_sin[:T]
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.output(self.out_norm(x))

    @torch.no_grad()
    def greedy(self, prompt: list[int], n_new: int) -> tuple[list[int], list[float]]:
        """Greedy continuation by full recomputation; returns the new ids and, for each, the gap
        between the best and the second-best logit (how far the choice is from a tie)."""
        ids = list(prompt)
        new, gaps = [], []
        for _ in range(n_new):
            logits = self(torch.tensor([ids]))[0, -1]
            top2 = torch.topk(logits, 2)
            new.append(int(top2.indices[0]))
            gaps.append(float(top2.values[0] - top2.values[1]))
            ids.append(new[-1])
        return new, gaps
