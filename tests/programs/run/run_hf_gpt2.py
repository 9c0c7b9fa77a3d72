"""``pt2doctor run --kernels --profile -- python run_hf_gpt2.py``: a random-init GPT-2 (transformers,
nothing downloaded) compiled the way its users do, ``model.compile()``, for inference: its
kernels map into transformers' modeling_gpt2.py, and so does their profiled time
(tests/integration/test_built.py, test_profile.py)."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(
    n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16, bos_token_id=0, eos_token_id=0
)
model = GPT2LMHeadModel(config).eval()
model.compile()
ids = torch.randint(0, config.vocab_size, (1, 8))
with torch.no_grad():
    for _ in range(12):  # run --profile: 3 warmup calls, then a window of 8
        model(input_ids=ids)
