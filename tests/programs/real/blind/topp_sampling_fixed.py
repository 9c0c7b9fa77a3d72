import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=512, d=64, n_layers=2, n_heads=4, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList([Block(d, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.size(1))
        x = self.tok(idx) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x[:, -1]))  # logits of the last position


@torch.compile
def sample_top_p(logits, temperature, top_p):
    probs = torch.softmax(logits / temperature, dim=-1)
    sorted_probs, sorted_idx = torch.sort(probs, dim=-1, descending=True)
    cum = torch.cumsum(sorted_probs, dim=-1)
    # smallest set of tokens whose total probability reaches top_p
    kept = sorted_probs.masked_fill(cum - sorted_probs >= top_p, 0.0)
    kept = kept / kept.sum(dim=-1, keepdim=True)
    choice = torch.multinomial(kept, num_samples=1)
    return sorted_idx.gather(-1, choice)


@torch.no_grad()
def generate(model, prompt, max_new_tokens, temperature=0.8, top_p=0.9, step_times=None):
    idx = prompt
    for _ in range(max_new_tokens):
        t0 = time.perf_counter()
        logits = model(idx)
        next_id = sample_top_p(logits, temperature, top_p)
        idx = torch.cat([idx, next_id], dim=1)
        if step_times is not None:
            step_times.append(time.perf_counter() - t0)
    return idx


def main():
    model = TinyLM().eval()
    cmodel = torch.compile(model)
    prompts = [torch.randint(0, 512, (1, n)) for n in (8, 12, 16)]

    torch.manual_seed(1)
    outs = []
    for prompt in prompts:
        out = generate(cmodel, prompt, max_new_tokens=24)
        outs.append(out)
        print(f"prompt len {prompt.size(1)} -> {out[0, prompt.size(1):].tolist()}")

    # a second round with the same prompts: everything should be compiled by now
    steps = []
    for prompt in prompts:
        generate(cmodel, prompt, max_new_tokens=24, step_times=steps)
    checksum = sum(int(o.sum()) for o in outs)
    print(f"ms_per_step: {1000 * sorted(steps)[len(steps) // 2]:.3f}")
    print(f"result: {checksum:.4g}")


if __name__ == "__main__":
    main()
