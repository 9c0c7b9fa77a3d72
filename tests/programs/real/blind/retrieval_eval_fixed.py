# Dense-retrieval evaluation: embed queries and a document corpus with a small
# two-tower encoder, score with a dot product, take the top-k documents and
# compute recall@k / MRR@k.  The sweep runs the same evaluation for several
# cutoffs read from the eval config.
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

EVAL_CFG = {"k": 10, "temperature": 0.05}


class Encoder(nn.Module):
    def __init__(self, vocab=1000, dim=64):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, dim))

    def forward(self, tokens):
        return F.normalize(self.mlp(self.emb(tokens)), dim=-1)


encoder = Encoder().eval()


@torch.compile(backend=backend)
def evaluate(query_tokens, doc_emb, gold, k):
    q = encoder(query_tokens)                              # (Q, D)
    scores = q @ doc_emb.T / EVAL_CFG["temperature"]       # (Q, N)
    top_scores, top_idx = torch.topk(scores, k, dim=-1)
    hit = top_idx == gold.unsqueeze(-1)                    # (Q, k)
    recall = hit.any(dim=-1).float().mean()
    ranks = torch.arange(1, k + 1, dtype=torch.float32)
    mrr = (hit.float() / ranks).sum(dim=-1).mean()
    return recall, mrr, top_scores.mean()


def make_data(n_docs=4000, n_q=512):
    doc_tokens = torch.randint(0, 1000, (n_docs, 24))
    with torch.no_grad():
        doc_emb = encoder(doc_tokens)
    gold = torch.randint(0, n_docs, (n_q,))
    # queries: noisy copies of their gold document's tokens
    q_tokens = doc_tokens[gold].clone()
    noise = torch.rand(q_tokens.shape) < 0.5
    q_tokens[noise] = torch.randint(0, 1000, (int(noise.sum()),))
    return q_tokens, doc_emb, gold


def main():
    q_tokens, doc_emb, gold = make_data()

    t_sweep = time.perf_counter()
    with torch.no_grad():
        for k in [1, 5, 10, 20, 50, 100, 200, 500, 1000]:
            EVAL_CFG["k"] = k
            times = []
            for _ in range(12):
                t0 = time.perf_counter()
                recall, mrr, mean_top = evaluate(q_tokens, doc_emb, gold, EVAL_CFG["k"])
                times.append((time.perf_counter() - t0) * 1e3)
            steady = sorted(times[2:])
            print(f"k={k:5d} recall@k {recall.item():.4f} mrr@k {mrr.item():.4f} "
                  f"mean_top_score {mean_top.item():.4f}")
            print(f"k={k:5d} timing: first call {times[0]:.1f} ms, "
                  f"steady {steady[len(steady) // 2]:.2f} ms (median of {len(steady)})")
    print(f"whole sweep (incl. compiles): {(time.perf_counter() - t_sweep) * 1e3:.0f} ms")
    print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])


if __name__ == "__main__":
    main()
