# LoRA adapters on a small GPT-2; evaluate the compiled model with adapters
# on/off and a per-layer ablation (adapter enabled in one layer at a time).
import os
import time
import statistics

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class LoRAConv1D(nn.Module):
    """Wraps GPT-2's Conv1D (weight is [in, out]) with a low-rank adapter."""

    def __init__(self, base, r=8, alpha=16):
        super().__init__()
        self.base = base
        in_f, out_f = base.weight.shape
        self.lora_A = nn.Parameter(torch.randn(in_f, r) * 0.05)
        self.lora_B = nn.Parameter(torch.randn(r, out_f) * 0.05)
        self.scaling = alpha / r
        # on/off switch as a 0-d tensor buffer: its *value* is not guarded by
        # Dynamo, so flipping it never recompiles (a Python bool attribute is
        # guarded and every on/off combination became its own graph).
        self.register_buffer("gate", torch.ones(()), persistent=False)

    def forward(self, x):
        out = self.base(x)
        return out + (x @ self.lora_A @ self.lora_B) * (self.scaling * self.gate)


def set_adapters(model, layers):
    """Enable the adapters of the given layer indices, disable the rest."""
    for i, block in enumerate(model.transformer.h):
        block.attn.c_attn.gate.fill_(1.0 if i in layers else 0.0)


cfg = GPT2Config(n_layer=8, n_head=4, n_embd=128, vocab_size=1000, n_positions=128)
model = GPT2LMHeadModel(cfg).eval()
for block in model.transformer.h:
    block.attn.c_attn = LoRAConv1D(block.attn.c_attn)

compiled = torch.compile(model, backend=backend)

g = torch.Generator().manual_seed(1)
val_batches = [torch.randint(0, cfg.vocab_size, (4, 64), generator=g) for _ in range(4)]


@torch.no_grad()
def evaluate():
    losses = []
    for ids in val_batches:
        logits = compiled(input_ids=ids).logits
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
        losses.append(loss.item())
    return sum(losses) / len(losses)


all_layers = set(range(cfg.n_layer))
configs = [("base", set()), ("lora", all_layers)]
configs += [(f"only_L{i}", {i}) for i in range(cfg.n_layer)]

for name, layers in configs:
    set_adapters(model, layers)
    print(f"{name:8s} eval loss {evaluate():.4f}")

# steady state: time one eval step (one batch) per configuration
times = {}
with torch.no_grad():
    for name, layers in configs:
        set_adapters(model, layers)
        ts = []
        for _ in range(12):
            t0 = time.perf_counter()
            compiled(input_ids=val_batches[0])
            ts.append((time.perf_counter() - t0) * 1e3)
        times[name] = statistics.median(ts)
    ts = []  # same step, uncompiled model, last configuration
    for _ in range(12):
        t0 = time.perf_counter()
        model(input_ids=val_batches[0])
        ts.append((time.perf_counter() - t0) * 1e3)
    times["eager_" + configs[-1][0]] = statistics.median(ts)
print("ms/step:", " ".join(f"{k}={v:.2f}" for k, v in times.items()))
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
