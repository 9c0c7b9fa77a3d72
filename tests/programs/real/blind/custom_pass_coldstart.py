import os
import time

# keep compiled artifacts between runs of this service
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.expanduser("~/.cache/my_service_inductor"))

import torch
import torch.nn as nn
import torch._inductor.config as inductor_config

torch.manual_seed(0)


def matmul_flops_pass(graph: torch.fx.Graph):
    """Post-grad pass: report the matmul FLOPs of every graph Inductor compiles."""
    n_mm, flops = 0, 0
    for node in graph.nodes:
        if node.op == "call_function" and node.target in (torch.ops.aten.mm.default,
                                                          torch.ops.aten.addmm.default):
            a, b = node.args[-2].meta["val"], node.args[-1].meta["val"]
            flops += 2 * a.shape[0] * a.shape[1] * b.shape[1]
            n_mm += 1
    print(f"[flops_pass] {n_mm} matmuls, {flops / 1e6:.1f} MFLOP per call")


inductor_config.post_grad_custom_post_pass = matmul_flops_pass


class Encoder(nn.Module):
    def __init__(self, d=96, n_layers=8):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            for _ in range(n_layers)
        )
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x.mean(dim=1))


def main():
    model = Encoder().eval()
    cmodel = torch.compile(model)
    x = torch.randn(8, 32, 96)

    with torch.no_grad():
        t0 = time.perf_counter()
        out = cmodel(x)  # first call compiles (or loads from the cache)
        compile_s = time.perf_counter() - t0
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            out = cmodel(x)
            times.append(time.perf_counter() - t0)

    print(f"cache dir: {os.environ['TORCHINDUCTOR_CACHE_DIR']}")
    print(f"compile_s: {compile_s:.2f}")
    print(f"ms_per_step: {1000 * sorted(times)[len(times) // 2]:.3f}")
    print(f"result: {out.abs().sum().item():.4g}")


if __name__ == "__main__":
    main()
