"""Small ViT classifier evaluated on batches at several image resolutions.

Position embeddings are learned for a 64x64 grid (8x8 patches of 8px) and
bicubic-interpolated to the grid of the incoming batch inside forward
(the DINO / timm `interpolate_pos_encoding` recipe).
"""
import math
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class ViT(nn.Module):
    def __init__(self, img_size=64, patch=8, dim=128, depth=4, heads=4, num_classes=10):
        super().__init__()
        self.patch = patch
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        n = (img_size // patch) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 4, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def interpolate_pos_encoding(self, x, h, w):
        npatch = x.shape[1] - 1
        N = self.pos_embed.shape[1] - 1
        if npatch == N and w == h:
            return self.pos_embed
        class_pos_embed = self.pos_embed[:, 0]
        patch_pos_embed = self.pos_embed[:, 1:]
        dim = x.shape[-1]
        w0 = w // self.patch
        h0 = h // self.patch
        # small offset to avoid floating point error in the interpolation (DINO)
        w0, h0 = w0 + 0.1, h0 + 0.1
        patch_pos_embed = F.interpolate(
            patch_pos_embed.reshape(1, int(math.sqrt(N)), int(math.sqrt(N)), dim).permute(0, 3, 1, 2),
            scale_factor=(w0 / math.sqrt(N), h0 / math.sqrt(N)),
            mode="bicubic",
        )
        patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
        return torch.cat((class_pos_embed.unsqueeze(0), patch_pos_embed), dim=1)

    def forward(self, img):
        B, _, h, w = img.shape
        x = self.patch_embed(img).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
        x = x + self.interpolate_pos_encoding(x, h, w)
        x = self.blocks(x)
        return self.head(self.norm(x[:, 0]))


def main():
    backend = os.environ.get("BACKEND", "inductor")
    torch.manual_seed(0)
    model = ViT().eval()
    cmodel = torch.compile(model, backend=backend)

    resolutions = [64, 96, 128, 80, 112, 64, 96, 128, 80, 112]
    g = torch.Generator().manual_seed(1)
    batches = [torch.randn(8, 3, r, r, generator=g) for r in resolutions]

    with torch.no_grad():
        # first pass: results (and compilation)
        t_first = time.perf_counter()
        for r, img in zip(resolutions, batches):
            logits = cmodel(img)
            print(f"res {r:4d}: logits sum {logits.sum().item():.4f}  "
                  f"pred {logits.argmax(-1).tolist()}")
        print(f"first pass incl. compile: {(time.perf_counter() - t_first) * 1e3:.0f} ms")

        def bench(fn, reps=3):
            times = []
            for _ in range(reps):
                for img in batches:
                    t0 = time.perf_counter()
                    fn(img)
                    times.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(times)

        print(f"steady compiled: {bench(cmodel):.2f} ms/batch (median over {3 * len(batches)})")
        print(f"steady eager:    {bench(model):.2f} ms/batch")

    print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])


if __name__ == "__main__":
    main()
