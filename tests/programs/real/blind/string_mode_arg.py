import os
import torch
import torch.nn as nn
import torch.nn.functional as F

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class MultiHeadNet(nn.Module):
    def __init__(self, d_in=16, d_hid=32, n_cls=5, d_emb=8):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(d_in, d_hid), nn.ReLU(), nn.Linear(d_hid, d_hid))
        self.cls_head = nn.Linear(d_hid, n_cls)
        self.emb_head = nn.Linear(d_hid, d_emb)
        self.dropout = nn.Dropout(0.0)

    def forward(self, x, mode):
        h = self.backbone(x)
        if mode == "train":
            return self.cls_head(self.dropout(h))
        elif mode == "eval":
            return self.cls_head(h).softmax(-1)
        elif mode == "embed":
            return F.normalize(self.emb_head(h), dim=-1)
        else:
            raise ValueError(mode)


model = MultiHeadNet()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
cmodel = torch.compile(model, backend=BACKEND)

modes = ["train", "train", "eval", "embed", "train", "eval", "embed", "train"]
for step, mode in enumerate(modes):
    x = torch.randn(4, 16)
    y = torch.randint(0, 5, (4,))
    if mode == "train":
        out = cmodel(x, mode)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"result: {loss.item():.4f}")
    else:
        with torch.no_grad():
            out = cmodel(x, mode)
        print(f"result: {out.sum().item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
