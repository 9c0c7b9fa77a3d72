# Sentence-embedding service: tiny BERT (random init), mean pooling, compiled; serves batches.
# Written blind by the sixth outside review (its p5/embed_serve.py), 2026-12-07: the loop runs
# without no_grad or inference_mode.
import time

import torch
from transformers import BertConfig, BertModel

cfg = BertConfig(
    vocab_size=8000,
    hidden_size=256,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=1024,
    max_position_embeddings=128,
)
torch.manual_seed(0)
model = BertModel(cfg).eval()


def embed(input_ids, attention_mask):
    out = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    m = attention_mask.unsqueeze(-1).to(out.dtype)
    return torch.nn.functional.normalize((out * m).sum(1) / m.sum(1), dim=-1)


embed_c = torch.compile(embed)
ids = torch.randint(0, 8000, (16, 64))
mask = torch.ones(16, 64, dtype=torch.long)
t0 = time.perf_counter()
for i in range(200):
    e = embed_c(ids, mask)
print(f"200 batches in {time.perf_counter() - t0:.2f} s, emb {tuple(e.shape)}")
print(f"checksum {float(e.sum()):.6f}")
