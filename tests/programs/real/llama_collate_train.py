"""A fine-tune the way the transformers docs write one, compiled whole: ``torch.compile(model)``
on a random-init Llama (nothing downloaded), batches from a DataLoader whose collate pads to the
longest sequence of each batch (so the length changes from batch to batch), and an evaluation
under ``torch.no_grad()`` whose last batch is smaller. LlamaForCausalLM.forward sits behind
transformers' own decorator (utils/deprecation.py), so the frame Dynamo compiles first is
library code: it is still the entry of the user's compiled call, and its inputs are the
tensors the collate made. Prints the losses (``result:``) and the graphs Dynamo compiled
(tests/integration/test_real_programs.py)."""

import random

import torch
import torch._dynamo.utils
from torch.utils.data import DataLoader
from transformers import LlamaConfig, LlamaForCausalLM


def collate(samples: list[list[int]]) -> dict[str, torch.Tensor]:
    longest = max(len(sample) for sample in samples)
    ids = torch.zeros(len(samples), longest, dtype=torch.long)
    mask = torch.zeros(len(samples), longest, dtype=torch.long)
    for row, sample in enumerate(samples):
        ids[row, : len(sample)] = torch.tensor(sample)
        mask[row, : len(sample)] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}


rng = random.Random(0)
train = [[rng.randrange(3, 100) for _ in range(rng.randint(6, 24))] for _ in range(24)]
held_out = [[rng.randrange(3, 100) for _ in range(rng.randint(6, 24))] for _ in range(10)]
torch.manual_seed(0)
config = LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                     pad_token_id=0)  # fmt: skip
model = LlamaForCausalLM(config)
compiled = torch.compile(model)  # MARK:compile
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
losses = []
model.train()
for batch in DataLoader(train, batch_size=4, collate_fn=collate):
    loss = compiled(**batch).loss  # MARK:call
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    losses.append(round(loss.item(), 4))
model.eval()
with torch.no_grad():
    for batch in DataLoader(held_out, batch_size=4, collate_fn=collate):  # 4, 4, then 2
        losses.append(round(compiled(**batch).loss.item(), 4))
print("result:", losses)
print(f"graphs: {torch._dynamo.utils.counters['stats']['unique_graphs']}")
