"""A GPT-2 fine-tune (random init, nothing downloaded) whose compiled training step calls the
model with labels, over batches of three lengths: transformers' loss_function logs a warning
inside forward on every call, a graph break that splits the step into six frames, each of
which recompiles once for the length (tests/integration/test_real_programs.py).
``--loss-type`` applies the fix pt2doctor prints (``model.loss_type = "ForCausalLM"``). Prints
the graphs Dynamo compiled."""

import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
model = GPT2LMHeadModel(config)
if "--loss-type" in sys.argv:
    model.loss_type = "ForCausalLM"
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


@torch.compile(backend="eager")  # MARK:compile
def train_step(ids: torch.Tensor) -> torch.Tensor:
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    return loss


for step in range(6):
    train_step(torch.randint(0, 100, (2, (8, 12, 16)[step % 3])))
    optimizer.step()
    optimizer.zero_grad()
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
