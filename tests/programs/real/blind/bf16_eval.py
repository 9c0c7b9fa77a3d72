# MLP classifier trained compiled in fp32; each epoch it is evaluated in bfloat16
# (model.to(torch.bfloat16)) through the same compiled model, then put back to fp32.
import os, time, statistics
import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

N_CLASSES, D_IN, BATCH, EPOCHS = 10, 32, 128, 4


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(D_IN, 256), nn.LayerNorm(256), nn.GELU(),
            nn.Linear(256, 256), nn.LayerNorm(256), nn.GELU(),
            nn.Linear(256, N_CLASSES))

    def forward(self, x):
        return self.net(x)


# synthetic task: class = argmax of a fixed random projection
proj = torch.randn(D_IN, N_CLASSES)
X_train = torch.randn(2048, D_IN); Y_train = (X_train @ proj).argmax(1)
X_val = torch.randn(1024, D_IN);   Y_val = (X_val @ proj).argmax(1)

model = Classifier()
cmodel = torch.compile(model, backend=backend)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)

train_times, eval_times = [], []
for epoch in range(EPOCHS):
    model.train()
    perm = torch.randperm(len(X_train))
    for i in range(0, len(X_train), BATCH):
        t0 = time.perf_counter()
        idx = perm[i:i + BATCH]
        loss = F.cross_entropy(cmodel(X_train[idx]), Y_train[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        train_times.append(time.perf_counter() - t0)

    # fast bf16 evaluation
    t0 = time.perf_counter()
    model.to(torch.bfloat16)
    model.eval()
    with torch.no_grad():
        logits = cmodel(X_val.to(torch.bfloat16)).float()
    val_loss = F.cross_entropy(logits, Y_val).item()
    val_acc = (logits.argmax(1) == Y_val).float().mean().item()
    model.to(torch.float32)          # back to fp32 to keep training
    eval_times.append(time.perf_counter() - t0)
    print(f"epoch {epoch}: train_loss {loss.item():.4g} val_loss {val_loss:.4g} val_acc {val_acc:.4g}")

w = torch.cat([p.detach().flatten() for p in model.parameters()])
print(f"final weights: sum {w.sum().item():.6g} abs-mean {w.abs().mean().item():.6g}")
print(f"steady-state train step: {statistics.median(train_times[16:]) * 1e3:.2f} ms (median of {len(train_times) - 16})")
print(f"eval pass (incl. dtype conversion): {statistics.median(eval_times[1:]) * 1e3:.2f} ms (median of {len(eval_times) - 1})")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
