import os
import torch
from transformers import GPT2Config, GPT2LMHeadModel

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=100)
model = GPT2LMHeadModel(config).eval()
cmodel = torch.compile(model, backend=BACKEND)

ids = torch.tensor([[1, 2, 3, 4]])

with torch.no_grad():
    for step in range(12):
        logits = cmodel(ids).logits           # whole sequence, no KV cache
        next_id = logits[:, -1, :].argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, next_id], dim=1)
        print(f"result: {next_id.item()}")

print("result:", ids.tolist())

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
