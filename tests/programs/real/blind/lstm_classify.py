import os
import time

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

VOCAB, EMB, HID, NCLS = 500, 32, 64, 4


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB, padding_idx=0)
        self.lstm = nn.LSTM(EMB, HID, batch_first=True)
        self.head = nn.Linear(HID, NCLS)

    def forward(self, tokens, lengths):
        x = self.emb(tokens)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.head(h[-1])


def make_batches(n_batches, bs=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n_batches):
        lengths = torch.randint(5, 40, (bs,), generator=g)
        seqs = [torch.randint(1, VOCAB, (int(L),), generator=g) for L in lengths]
        tokens = pad_sequence(seqs, batch_first=True)  # padded to the longest in the batch
        labels = torch.randint(0, NCLS, (bs,), generator=g)
        batches.append((tokens, lengths, labels))
    return batches


model = LSTMClassifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
cmodel = torch.compile(model, backend=backend)
loss_fn = nn.CrossEntropyLoss()

batches = make_batches(30)
losses, times = [], []
for i, (tokens, lengths, labels) in enumerate(batches):
    t0 = time.perf_counter()
    logits = cmodel(tokens, lengths)
    loss = loss_fn(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
    losses.append(loss.item())

print("losses:", " ".join(f"{l:.4f}" for l in losses[::5]), f"last={losses[-1]:.4f}")
print(f"first step {times[0]*1e3:.1f} ms; steady ms/step (median of last 20): {sorted(times[10:])[10]*1e3:.3f}")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
print("graph_breaks:", dict(torch._dynamo.utils.counters["graph_break"]))
