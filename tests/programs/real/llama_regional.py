"""Regional compilation, as the transformers docs recommend it: each decoder layer of a
random-init Llama (nothing downloaded) compiled on its own, ``layer.compile()``, then a few
training steps (tests/integration/test_real_programs.py). The layers share one code object
and differ by ``self_attn.layer_idx``: a per-layer constant, not a counter. Prints the graphs
Dynamo compiled."""

import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

LAYERS = 10
config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=LAYERS,
                     num_attention_heads=2, num_key_value_heads=2, vocab_size=100,
                     max_position_embeddings=64)  # fmt: skip
model = LlamaForCausalLM(config)
if "--limit" in sys.argv:
    torch._dynamo.config.recompile_limit = 2 * LAYERS
for layer in model.model.layers:
    layer.compile(backend="eager")  # MARK:compile
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _step in range(3):
    ids = torch.randint(0, 100, (2, 16))
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
