"""A tiny language-model server with five torch.compile problems planted in it.

`make demo` runs this file under ``TORCH_TRACE=build/demo/trace`` and then points
``pt2doctor report`` at the trace, so the report has something real to explain. The program
builds a small transformer from scratch (random weights, fixed seed, no downloads), compiles it,
and serves a stream of generate and score requests with varying prompt lengths.

Planted problems, each marked ``PLANTED`` where it lives:

1. Hot graph break: ``TinyLM.forward`` calls ``.item()`` on the model's confidence and branches
   on it in Python. Every request splits into two graphs with an eager hop between them. The
   float handed to the resume function is first specialized, so its second value recompiles it
   once more (``___stack0 == 0.0144...``) before Dynamo makes the float dynamic.
2. Startup graph break: ``startup_self_check`` prints a line from inside a compiled function.
   It runs once, so the break costs one extra graph and nothing per request.
3. Size recompiles: prompts arrive with 8, 12, 16, 24 ... tokens. The first length is compiled
   statically; the second recompiles the frame with a dynamic sequence length.
4. Python flag recompile: ``causal`` is a plain ``bool`` argument, so each of its two values gets
   its own graph behind a constant guard. Bounded (two variants), so mostly harmless.
5. Frame skipped to eager: ``detokenize`` graph-breaks inside a ``for`` loop; Dynamo gives up on
   the whole frame and runs it eagerly on every call.

The backend comes from ``PT2DOCTOR_DEMO_BACKEND`` (default ``inductor``). The run makes 8 frame
compiles (7 graphs). With Inductor it takes ~40-60 s on 2 CPU cores with a cold Inductor cache (the
first compile alone is ~12-17 s) and ~12 s with a warm one; with ``eager`` it takes ~8 s, most
of it importing torch and Dynamo tracing.
"""

from __future__ import annotations

import math
import os
import time

import torch
from torch import nn

BACKEND = os.environ.get("PT2DOCTOR_DEMO_BACKEND", "inductor")
VOCAB = 256
DIM = 64
HEADS = 4
LAYERS = 2
BATCH = 2
CONFIDENCE_THRESHOLD = 0.5

# (task, prompt length) per request. Lengths never repeat the first one, so the size guard fails
# once and Dynamo switches the sequence dimension to dynamic; the two tasks flip the bool flag.
REQUESTS = [
    ("generate", 8),
    ("generate", 12),
    ("generate", 16),
    ("score", 16),
    ("generate", 24),
    ("score", 12),
    ("generate", 20),
    ("score", 24),
    ("generate", 12),
    ("score", 20),
]


class SelfAttention(nn.Module):
    """Multi-head self-attention with an optional causal mask."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, causal: bool) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (
            t.view(batch, seq, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v)
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(dim // self.heads)
        if causal:
            mask = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        attended = scores.softmax(dim=-1) @ v
        return self.out(attended.transpose(1, 2).reshape(batch, seq, dim))


class Block(nn.Module):
    """Pre-norm transformer block: attention then a two-layer MLP, both residual."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, causal: bool) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), causal)
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    """Token embedding, a stack of blocks, and a head that predicts the next token."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(64, DIM) * 0.02)
        self.blocks = nn.ModuleList(Block(DIM, HEADS) for _ in range(LAYERS))
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB)
        self.refine = nn.Linear(DIM, VOCAB)

    def forward(self, tokens: torch.Tensor, causal: bool) -> torch.Tensor:
        # PLANTED (4): `causal` is a Python bool, so each value is a separate graph.
        seq = tokens.shape[1]
        h = self.embed(tokens) + self.pos[:seq]
        for block in self.blocks:
            h = block(h, causal)
        h = self.norm(h[:, -1])
        logits = self.head(h)
        # PLANTED (1): `.item()` pulls a tensor into Python on every request. Dynamo ends the
        # graph here, reads the value eagerly, and runs the `if` in a second (resume) graph.
        confidence = logits.softmax(dim=-1).amax(dim=-1).min().item()
        if confidence < CONFIDENCE_THRESHOLD:
            logits = logits + self.refine(h)
        return logits


def startup_self_check(model: TinyLM) -> torch.Tensor:
    """Check the weights once before serving; compiled like the rest, run once."""
    norms = torch.stack([p.detach().norm() for p in model.parameters()])
    # PLANTED (2): a print inside a compiled function is a graph break, but only at startup.
    print(f"self-check: {len(norms)} parameter tensors")
    return norms.isfinite().all()


def detokenize(next_tokens: torch.Tensor) -> list[str]:
    """Turn next-token ids into printable strings, one per request in the batch."""
    texts = []
    for token in next_tokens:
        # PLANTED (5): `.item()` inside a for loop. Dynamo cannot resume mid-loop, so it skips
        # this whole frame and it runs eagerly on every call.
        texts.append(chr(32 + token.item() % 95))
    return texts


def serve(model: TinyLM) -> tuple[list[float], list[str]]:
    """Serve REQUESTS in order; return each request's latency in seconds and the replies."""
    compiled_model = torch.compile(model, backend=BACKEND)
    compiled_detokenize = torch.compile(detokenize, backend=BACKEND)
    generator = torch.Generator().manual_seed(1)
    latencies = []
    replies = []
    for task, seq_len in REQUESTS:
        tokens = torch.randint(0, VOCAB, (BATCH, seq_len), generator=generator)
        start = time.perf_counter()
        with torch.no_grad():
            logits = compiled_model(tokens, causal=task == "generate")
            replies.extend(compiled_detokenize(logits.argmax(dim=-1)))
        latencies.append(time.perf_counter() - start)
    return latencies, replies


def main() -> None:
    torch.manual_seed(0)
    model = TinyLM().eval()
    started = time.perf_counter()
    healthy = torch.compile(startup_self_check, backend=BACKEND)(model)
    if not bool(healthy):
        raise SystemExit("self-check failed: non-finite weights")
    latencies, replies = serve(model)
    total = time.perf_counter() - started
    mean_ms = 1000 * sum(latencies) / len(latencies)
    print(
        f"served {len(latencies)} requests, {len(replies)} replies (backend {BACKEND}): "
        f"mean latency {mean_ms:.1f} ms, first {1000 * latencies[0]:.0f} ms, total {total:.1f} s"
    )


if __name__ == "__main__":
    main()
