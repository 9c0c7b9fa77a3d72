"""Plants Hugging Face generate()'s prefill/decode recompiles with a growing KV cache.

A random-init GPT-2 (no download: built from a config) whose ``forward`` is compiled, used by
``generate()`` with prompts of 8, 12, 8 and 20 tokens. Prefill runs with an empty cache and the
whole prompt; decode steps with an initialized cache and one token; then the cache length and
the prompt length become dynamic. Expected: ``input_ids`` length 8 -> 1 with the cache going
from empty to filled (the prefill/decode pattern -> static cache advice), bounded outlook.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

PROMPTS = (8, 12, 8, 20)
NEW_TOKENS = 3


def main():
    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=2,
        vocab_size=100,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPT2LMHeadModel(config).eval()
    model.forward = torch.compile(model.forward, backend="eager")  # MARK:compile
    for length in PROMPTS:
        ids = torch.randint(0, 100, (1, length))
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=NEW_TOKENS,
            do_sample=False,
            pad_token_id=0,
        )
        assert out.shape[1] == length + NEW_TOKENS
    print("generated", len(PROMPTS))


if __name__ == "__main__":
    main()
