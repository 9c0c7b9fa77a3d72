import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, D_MODEL, N_HEADS, N_LAYERS = 512, 128, 4, 4
PROMPT_LEN, NEW_TOKENS = 8, 24


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x, cache):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D_MODEL, dim=-1)
        q = q.view(B, T, N_HEADS, -1).transpose(1, 2)
        k = k.view(B, T, N_HEADS, -1).transpose(1, 2)
        v = v.view(B, T, N_HEADS, -1).transpose(1, 2)
        cache["k"] = torch.cat([cache["k"], k], dim=2)
        cache["v"] = torch.cat([cache["v"], v], dim=2)
        attn = F.scaled_dot_product_attention(q, cache["k"], cache["v"], is_causal=T > 1)
        x = x + self.proj(attn.transpose(1, 2).reshape(B, T, D_MODEL))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.layers = nn.ModuleList(DecoderLayer() for _ in range(N_LAYERS))
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, tokens, caches):
        x = self.embed(tokens)
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cache)
        return self.lm_head(self.ln_f(x))


model = TinyLM().eval()


@torch.compile
def decode_step(tokens, caches):
    logits = model(tokens, caches)
    return logits[:, -1].argmax(-1, keepdim=True)


prompt = torch.randint(0, VOCAB, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(1))
empty = torch.zeros(1, N_HEADS, 0, D_MODEL // N_HEADS)
caches = [{"k": empty, "v": empty} for _ in range(N_LAYERS)]
generated = [prompt]
times = []
with torch.no_grad():
    next_tok = decode_step(prompt, caches)
    for _ in range(NEW_TOKENS):
        generated.append(next_tok)
        t0 = time.perf_counter()
        next_tok = decode_step(next_tok, caches)
        times.append((time.perf_counter() - t0) * 1000)

out = torch.cat(generated, dim=1)
print("tokens:", out[0].tolist())
print(f"result: {float(out.sum()):.4g}")
print(f"ms_per_step: {statistics.median(times[NEW_TOKENS // 2:]):.2f}")
