"""An encoder-decoder: a random-init T5 (nothing downloaded) whose forward is compiled, used by
``generate()`` to translate three sentences of 6, 9 and 14 tokens
(tests/integration/test_real_programs.py). ``--static`` applies the fix pt2doctor prints: a
static cache of one size and the prompts padded to one length. Prints the graphs Dynamo compiled."""

import sys

import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
config = T5Config(d_model=32, d_ff=64, d_kv=16, num_layers=1, num_decoder_layers=1,
                  num_heads=2, vocab_size=100, decoder_start_token_id=0, pad_token_id=0,
                  eos_token_id=1)  # fmt: skip
model = T5ForConditionalGeneration(config).eval()
model.forward = torch.compile(model.forward, backend="eager")  # MARK:compile
fixed = "--static" in sys.argv
extra = {"cache_implementation": "static", "max_length": 8} if fixed else {"max_new_tokens": 4}
for length in (6, 9, 14):
    sentence = torch.randint(2, 100, (1, length))
    mask = torch.ones_like(sentence)
    if fixed:  # padded to one length, as tokenizer(..., padding="max_length") does
        sentence = torch.nn.functional.pad(sentence, (0, 16 - length))
        mask = torch.nn.functional.pad(mask, (0, 16 - length))
    model.generate(sentence, attention_mask=mask, do_sample=False, **extra)
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
