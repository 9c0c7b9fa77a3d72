"""A server that pads each request to a bucket length (16, 32 or 64 tokens) and runs a BERT
classifier (random init, nothing downloaded) compiled with ``dynamic=False``: one graph per
bucket, as the user planned (tests/integration/test_real_programs.py). Prints the graphs Dynamo
compiled."""

import torch
from transformers import BertConfig, BertForSequenceClassification

BUCKETS = (16, 32, 64)

torch.manual_seed(0)
config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, vocab_size=100, max_position_embeddings=64)  # fmt: skip
model = BertForSequenceClassification(config).eval()
compiled = torch.compile(model, backend="eager", dynamic=False)  # MARK:compile


def serve(tokens: torch.Tensor) -> torch.Tensor:
    bucket = next(size for size in BUCKETS if size >= tokens.shape[0])
    ids = torch.zeros(1, bucket, dtype=torch.long)
    mask = torch.zeros(1, bucket, dtype=torch.long)
    ids[0, : tokens.shape[0]], mask[0, : tokens.shape[0]] = tokens, 1
    with torch.no_grad():
        return compiled(input_ids=ids, attention_mask=mask).logits


for length in (5, 12, 20, 9, 40, 14, 30, 60, 3, 25, 50, 7):
    serve(torch.randint(1, 100, (length,)))
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
