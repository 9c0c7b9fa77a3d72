"""A vision model over batch sizes: a random-init ViT (nothing downloaded) classifying images
in batches of 1, 2, 4 and 8, as an image service receives them
(tests/integration/test_real_programs.py). Prints the graphs Dynamo compiled."""

import torch
from transformers import ViTConfig, ViTForImageClassification

torch.manual_seed(0)
config = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32,
                   num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                   num_labels=10)  # fmt: skip
model = ViTForImageClassification(config).eval()
compiled = torch.compile(model, backend="eager")  # MARK:compile
with torch.no_grad():
    for batch in (1, 2, 4, 8):
        compiled(pixel_values=torch.randn(batch, 3, 32, 32))  # MARK:call
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
