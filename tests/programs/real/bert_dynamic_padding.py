"""Sequence classification with dynamic padding, as a transformers fine-tune batches text: a
random-init BERT (nothing downloaded) called ``model(**batch)`` on batches padded to their
longest sequence, so the length changes (tests/integration/test_real_programs.py).
The fix pt2doctor prints (mark the length of every tensor passed) is applied by
``run --try-fixes`` (tests/integration/test_try_fixes.py); ``--mark-ids`` marks input_ids
alone, which the fix says does not help. Prints the graphs Dynamo compiled."""

import sys

import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, vocab_size=100, max_position_embeddings=64)  # fmt: skip
model = BertForSequenceClassification(config).eval()
compiled = torch.compile(model, backend="eager")
with torch.no_grad():
    for length in (9, 12, 15, 11):
        batch = {"input_ids": torch.randint(1, 100, (4, length)),
                 "attention_mask": torch.ones(4, length, dtype=torch.long)}  # fmt: skip
        if "--mark-ids" in sys.argv:
            torch._dynamo.maybe_mark_dynamic(batch["input_ids"], 1)
        compiled(**batch)
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
