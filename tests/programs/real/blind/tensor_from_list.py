# Tiny sequence classifier over variable-length, padded token batches (mean pooling over valid tokens).
import os
import random
import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(0)
torch.manual_seed(0)
BACKEND = os.environ.get("BACKEND", "inductor")

VOCAB, D, MAX_LEN, N_CLASSES = 50, 32, 24, 3


class SeqClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(MAX_LEN, D)
        self.mix = nn.Linear(D, D)
        self.head = nn.Linear(D, N_CLASSES)

    def forward(self, tokens, lengths):
        # tokens: [B, T] padded, lengths: python list of the true lengths
        B, T = tokens.shape
        positions = torch.tensor(list(range(T)))
        h = self.tok(tokens) + self.pos(positions)[None]
        h = torch.tanh(self.mix(h))
        lens = torch.tensor(lengths)
        mask = (positions[None, :] < lens[:, None]).float()
        pooled = (h * mask[..., None]).sum(1) / lens[:, None].float()
        return self.head(pooled)


def make_batch(batch_size=8):
    lengths = [random.randint(4, 20) for _ in range(batch_size)]
    T = max(lengths)
    tokens = torch.zeros(batch_size, T, dtype=torch.long)
    for i, L in enumerate(lengths):
        tokens[i, :L] = torch.randint(1, VOCAB, (L,))
    # label: a simple function of token content
    labels = torch.tensor([int(tokens[i, :L].sum()) % N_CLASSES for i, L in enumerate(lengths)])
    return tokens, lengths, labels


model = SeqClassifier()
cmodel = torch.compile(model, backend=BACKEND)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
batches = [make_batch() for _ in range(25)]

for step, (tokens, lengths, labels) in enumerate(batches):
    logits = cmodel(tokens, lengths)
    loss = F.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0 or step == 24:
        print(f"step {step:2d} T={tokens.shape[1]:2d} loss {loss.item():.4f}")

with torch.no_grad():
    tokens, lengths, labels = batches[0]
    print("logits[0]", [round(v, 4) for v in cmodel(tokens, lengths)[0].tolist()])

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print("unique_graphs", counters["stats"]["unique_graphs"])
    print("frames", dict(counters["frames"]))
    print("graph_breaks", sum(counters["graph_break"].values()))
    for k, v in counters["graph_break"].items():
        print("  ", v, k.splitlines()[0])
