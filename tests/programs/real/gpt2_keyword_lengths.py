"""Serving a random-init GPT-2 (transformers, nothing downloaded) the way its model card shows:
``model(input_ids=ids)``, with prompts of several lengths. transformers' wrapper takes
``**kwargs``, so Dynamo sees ``kwargs['input_ids']``: the fix pt2doctor prints must name the
tensor this line passes (``ids``) and the line, not a ``batch`` the program does not have.
``--mark`` applies that fix as printed. Prints the graphs Dynamo compiled and a checksum of
the logits (tests/integration/test_real_programs.py)."""

import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=64,
                    bos_token_id=0, eos_token_id=0)  # fmt: skip
model = GPT2LMHeadModel(config).eval()
compiled = torch.compile(model, backend="eager")
total = 0.0
with torch.no_grad():
    for length in (8, 12, 16, 10):
        ids = torch.randint(0, config.vocab_size, (2, length))
        if "--mark" in sys.argv:
            torch._dynamo.maybe_mark_dynamic(ids, 1)
        total += float(compiled(input_ids=ids).logits.sum())  # MARK:call
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
print(f"checksum: {total:.6f}")
