"""A fine-tune loop with an LR scheduler and an evaluation pass, on regional compilation as the
transformers docs recommend it: each decoder layer of a random-init Llama (nothing
downloaded) compiled on its own, ``layer.compile()``. Training then ``model.eval()`` under
``torch.no_grad()``: each layer serves two states (training, eval), so covering the layers
takes layers × states variants (tests/integration/test_try_fixes.py). ``--limit N`` sets
``torch._dynamo.config.recompile_limit`` as a user would. Prints the graphs Dynamo compiled."""

import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM, get_linear_schedule_with_warmup

LAYERS = 6
if "--limit" in sys.argv:
    torch._dynamo.config.recompile_limit = int(sys.argv[sys.argv.index("--limit") + 1])
config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=LAYERS,
                     num_attention_heads=2, num_key_value_heads=2, vocab_size=100,
                     max_position_embeddings=64, attention_dropout=0.1)  # fmt: skip
model = LlamaForCausalLM(config)
for layer in model.model.layers:
    layer.compile(backend="eager")  # MARK:compile
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=4)
for _epoch in range(2):
    model.train()
    for _step in range(2):
        ids = torch.randint(0, 100, (2, 16))
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    model.eval()
    with torch.no_grad():
        ids = torch.randint(0, 100, (2, 16))
        model(input_ids=ids, labels=ids)  # MARK:eval
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
