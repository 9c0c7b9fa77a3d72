"""A BERT encoder (transformers, random init, nothing downloaded) served with
``torch.compile(encoder, dynamic=False)`` while the batch size varies: the user's own setting
keeps every size static (tests/integration/test_real_programs.py). The fix, dropping
``dynamic=False``, is applied by ``run --try-fixes`` (tests/integration/test_try_fixes.py).
Prints the graphs Dynamo compiled."""

import torch
from transformers import BertConfig, BertModel

config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, vocab_size=100, max_position_embeddings=32)  # fmt: skip
encoder = BertModel(config).eval()
compiled = torch.compile(encoder, backend="eager", dynamic=False)  # MARK:compile
with torch.no_grad():
    for batch in (2, 3, 4, 5, 6, 7):
        compiled(input_ids=torch.randint(0, 100, (batch, 12)))
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
