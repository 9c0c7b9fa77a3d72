import os
import torch
import torch.nn as nn
import torch.nn.functional as F

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

VOCAB, DIM, PAD = 50, 32, 0


class TokenTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM, padding_idx=PAD)
        self.proj = nn.Linear(DIM, DIM)
        self.out = nn.Linear(DIM, VOCAB)

    def forward(self, tokens, labels):
        h = F.gelu(self.proj(self.emb(tokens)))
        logits = self.out(h)                    # (B, T, V)
        valid = tokens != PAD                   # (B, T) bool
        sel_logits = logits[valid]              # (N_valid, V)  data-dependent N
        sel_labels = labels[valid]              # (N_valid,)
        loss = F.cross_entropy(sel_logits, sel_labels)
        return loss, sel_logits.argmax(-1).eq(sel_labels).float().mean()


model = TokenTagger()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
cmodel = torch.compile(model, backend=BACKEND)

B, T = 8, 16
for step in range(12):
    tokens = torch.randint(1, VOCAB, (B, T))
    lengths = torch.randint(4, T + 1, (B,))
    tokens[torch.arange(T)[None, :] >= lengths[:, None]] = PAD  # right padding
    labels = (tokens * 7 + 3) % VOCAB
    loss, acc = cmodel(tokens, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} result: {loss.item():.4f} acc {acc.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters

    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
