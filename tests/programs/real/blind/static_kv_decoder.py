import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, N_LAYERS, N_HEADS, MAX_SEQ = 512, 128, 2, 4, 96
HEAD_DIM = DIM // N_HEADS


class KVCache(nn.Module):
    def __init__(self, max_batch, max_seq):
        super().__init__()
        shape = (max_batch, N_HEADS, max_seq, HEAD_DIM)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))

    def update(self, input_pos, k, v):
        self.k_cache[:, :, input_pos] = k
        self.v_cache[:, :, input_pos] = v
        return self.k_cache, self.v_cache


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wqkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.kv_cache = None

    def forward(self, x, mask, input_pos):
        B, T, _ = x.shape
        q, k, v = self.wqkv(x).split(DIM, dim=-1)
        q, k, v = (t.view(B, T, N_HEADS, HEAD_DIM).transpose(1, 2) for t in (q, k, v))
        k, v = self.kv_cache.update(input_pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(B, T, DIM))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn, self.norm1, self.norm2 = Attention(), nn.RMSNorm(DIM), nn.RMSNorm(DIM)
        self.ffn = nn.Sequential(nn.Linear(DIM, 4 * DIM, bias=False), nn.SiLU(), nn.Linear(4 * DIM, DIM, bias=False))

    def forward(self, x, mask, input_pos):
        x = x + self.attn(self.norm1(x), mask, input_pos)
        return x + self.ffn(self.norm2(x))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(MAX_SEQ, DIM)
        self.layers = nn.ModuleList([Block() for _ in range(N_LAYERS)])
        self.norm, self.out = nn.RMSNorm(DIM), nn.Linear(DIM, VOCAB, bias=False)
        self.register_buffer("causal_mask", torch.tril(torch.ones(MAX_SEQ, MAX_SEQ, dtype=torch.bool)))

    def setup_caches(self, max_batch, max_seq):
        for layer in self.layers:
            layer.attn.kv_cache = KVCache(max_batch, max_seq)

    def forward(self, idx, input_pos):
        mask = self.causal_mask[None, None, input_pos]
        x = self.tok(idx) + self.pos(input_pos)
        for layer in self.layers:
            x = layer(x, mask, input_pos)
        return self.out(self.norm(x))


def decode_one_token(model, cur_token, input_pos):
    logits = model(cur_token, input_pos)
    return torch.argmax(logits[:, -1], dim=-1, keepdim=True)


def generate(model, prompt, max_new_tokens, decode_fn, step_times):
    model.setup_caches(max_batch=1, max_seq=MAX_SEQ)
    T = prompt.size(1)
    input_pos = torch.arange(T)
    next_token = decode_one_token(model, prompt, input_pos)  # prefill, eager
    tokens = [next_token]
    input_pos = torch.tensor([T])
    for _ in range(max_new_tokens - 1):
        t0 = time.perf_counter()
        next_token = decode_fn(model, next_token, input_pos)
        step_times.append(time.perf_counter() - t0)
        input_pos += 1
        tokens.append(next_token.clone())
    return torch.cat(tokens, dim=1)


def main():
    model = Transformer().eval()
    prompt = torch.randint(0, VOCAB, (1, 16))
    compiled_decode = torch.compile(decode_one_token, mode="reduce-overhead")

    eager_times, compiled_times = [], []
    for rep in range(3):
        out_eager = generate(model, prompt, 32, decode_one_token, eager_times)
        out_comp = generate(model, prompt, 32, compiled_decode, compiled_times)
    same = torch.equal(out_eager, out_comp)
    print(f"tokens: {out_comp[0].tolist()}")
    print(f"compiled == eager tokens: {same}")
    ms_eager = 1000 * sorted(eager_times[31:])[len(eager_times[31:]) // 2]
    ms_comp = 1000 * sorted(compiled_times[31:])[len(compiled_times[31:]) // 2]
    print(f"eager_ms_per_token: {ms_eager:.3f}")
    print(f"ms_per_step: {ms_comp:.3f}")
    print(f"result: {int(out_comp.sum()):.4g}")


if __name__ == "__main__":
    main()
