"""Generation with the default (dynamic) KV cache: a random-init GPT-2 (nothing downloaded), its
forward compiled, ``generate()`` over prompts of 8 and 12 tokens
(tests/integration/test_real_programs.py). Prefill and decode differ in the cache and the input
length; ``--static`` applies the fix pt2doctor prints (``cache_implementation="static"``).
Prints the graphs Dynamo compiled."""

import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64,
                    bos_token_id=0, eos_token_id=0, pad_token_id=0)  # fmt: skip
model = GPT2LMHeadModel(config).eval()
model.forward = torch.compile(model.forward, backend="eager")  # MARK:compile
static = {"cache_implementation": "static", "max_length": 24}
extra = static if "--static" in sys.argv else {"max_new_tokens": 4}
for length in (8, 12):
    prompt = torch.randint(1, 100, (1, length))
    model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False, **extra)
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
