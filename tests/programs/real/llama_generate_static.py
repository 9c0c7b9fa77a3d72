"""Generation with a static KV cache, as the transformers docs recommend for torch.compile: a
random-init Llama (nothing downloaded), its forward compiled, ``generate(...,
cache_implementation="static")`` over two prompts (tests/integration/test_real_programs.py).
Prints the graphs Dynamo compiled."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=2, vocab_size=100,
                     max_position_embeddings=64, pad_token_id=0)  # fmt: skip
model = LlamaForCausalLM(config).eval()
model.forward = torch.compile(model.forward, backend="eager")  # MARK:compile
for prompt in (torch.randint(1, 100, (1, 8)), torch.randint(1, 100, (1, 8))):
    model.generate(prompt, max_new_tokens=6, do_sample=False, cache_implementation="static",
                   max_length=32)  # fmt: skip
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
