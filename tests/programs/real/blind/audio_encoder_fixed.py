import math
import time

import torch
import torch.nn as nn

torch.manual_seed(0)


class ConvFrontend(nn.Module):
    """Two strided 1D convs: waveform (B, 1, T) -> frames (B, T // 16, D)."""

    def __init__(self, d_model):
        super().__init__()
        self.conv1 = nn.Conv1d(1, d_model, kernel_size=8, stride=4, padding=2)
        self.conv2 = nn.Conv1d(d_model, d_model, kernel_size=8, stride=4, padding=2)
        self.act = nn.GELU()

    def forward(self, wav):
        x = self.act(self.conv1(wav))
        x = self.act(self.conv2(x))
        return x.transpose(1, 2)


class AudioEncoder(nn.Module):
    def __init__(self, d_model=64, n_heads=4, n_layers=2, max_frames=2048):
        super().__init__()
        self.frontend = ConvFrontend(d_model)
        pos = torch.arange(max_frames).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_frames, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=4 * d_model,
                                           batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, wav):
        x = self.frontend(wav)
        x = x + self.pe[: x.size(1)]
        x = self.encoder(x)
        x = self.norm(x)
        return x.mean(dim=1)  # clip embedding


def main():
    model = AudioEncoder().eval()
    # static shapes are faster, so tell the compiler not to bother with dynamic ones
    encoder = torch.compile(model)

    # a small "dataset" of clips with different durations (16 kHz, 0.1 s .. 0.5 s)
    lengths = [1600 + 320 * i for i in range(11)]
    clips = [torch.randn(1, 1, n) for n in lengths]

    times = []
    embeddings = []
    with torch.no_grad():
        for rep in range(3):
            for clip in clips:
                t0 = time.perf_counter()
                emb = encoder(clip)
                times.append(time.perf_counter() - t0)
                if rep == 0:
                    embeddings.append(emb)
            print(f"pass {rep}: {len(clips)} clips done")

    steady = sorted(times[len(clips):])
    checksum = torch.cat(embeddings).abs().sum().item()
    print(f"ms_per_step: {1000 * steady[len(steady) // 2]:.3f}")
    print(f"result: {checksum:.4g}")


if __name__ == "__main__":
    main()
