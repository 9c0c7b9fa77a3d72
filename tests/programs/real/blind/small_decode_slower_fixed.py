import copy
import time

import torch
import torch.nn as nn

torch.manual_seed(0)

VOCAB, HIDDEN, BOS = 500, 128, 1


class GRUDecoder(nn.Module):
    """One step of a small GRU seq2seq decoder with attention-free context."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, HIDDEN)
        self.cell = nn.GRUCell(2 * HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, token, hidden, context):
        x = torch.cat([self.emb(token), context], dim=-1)
        hidden = self.cell(x, hidden)
        return self.out(hidden), hidden


@torch.no_grad()
def greedy_decode(step_fn, context, max_len=48):
    token = torch.full((1,), BOS, dtype=torch.long)
    hidden = torch.zeros(1, HIDDEN)
    out, times = [], []
    for _ in range(max_len):
        t0 = time.perf_counter()
        logits, hidden = step_fn(token, hidden, context)
        token = logits.argmax(dim=-1)
        times.append(time.perf_counter() - t0)
        out.append(int(token))
    return out, times


def median_ms(times):
    return 1000 * sorted(times)[len(times) // 2]


def main():
    model = GRUDecoder().eval()
    compiled = torch.compile(copy.deepcopy(model))
    decoder = model  # the one the service uses: eager is faster for this batch-1 step on CPU

    contexts = [torch.randn(1, HIDDEN) for _ in range(6)]
    greedy_decode(compiled, contexts[0])  # warm up / compile
    greedy_decode(model, contexts[0])

    eager_t, comp_t, used_t, outputs = [], [], [], []
    for ctx in contexts:  # requests, batch size 1
        _, t = greedy_decode(model, ctx)
        eager_t += t
        _, t = greedy_decode(compiled, ctx)
        comp_t += t
        tokens, t = greedy_decode(decoder, ctx)
        used_t += t
        outputs.append(tokens)

    print(f"eager_ms_per_token: {median_ms(eager_t):.4f}")
    print(f"compiled_ms_per_token: {median_ms(comp_t):.4f}")
    print(f"ms_per_step: {median_ms(used_t):.4f}")
    print(f"result: {sum(sum(o) for o in outputs):.4g}")


if __name__ == "__main__":
    main()
