# Scoring candidate continuations with a temperature-annealed softmax
# (e.g. for a reranker / policy-gradient baseline). Temperature decays every call.
import math
import random
import time

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
random.seed(0)


@torch.compile
def score(logits, rewards, temperature):
    logp = F.log_softmax(logits / temperature, dim=-1)
    p = logp.exp()
    expected = (p * rewards).sum(-1)
    entropy = -(p * logp).sum(-1)
    return expected.mean(), entropy.mean()


W = torch.randn(64, 50)
total = 0.0
t0 = time.time()
N = 60
for step in range(N):
    temperature = 0.1 + 1.9 * math.exp(-step / 15)  # annealing schedule
    feats = torch.randn(16, 64)
    logits = feats @ W
    rewards = torch.rand(16, 50)
    exp_r, ent = score(logits, rewards, temperature)
    total += exp_r.item() + 0.1 * ent.item()
    if step % 10 == 0:
        print(f"step {step}: T={temperature:.3f} E[r]={exp_r.item():.4f} H={ent.item():.4f}")
print(f"{(time.time() - t0) * 1000 / N:.2f} ms/call")
print(f"result: {total:.4g}")
