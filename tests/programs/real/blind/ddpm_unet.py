# Unconditional DDPM sampling with a small random-init UNet2DModel, compiled UNet,
# loop written like the diffusers docs ("models and schedulers" tutorial).
import os, statistics, time
import torch
from diffusers import UNet2DModel, DDPMScheduler

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

unet = UNet2DModel(
    sample_size=32, in_channels=3, out_channels=3, layers_per_block=1,
    block_out_channels=(32, 64), norm_num_groups=8,
    down_block_types=("DownBlock2D", "AttnDownBlock2D"),
    up_block_types=("AttnUpBlock2D", "UpBlock2D"),
).eval()
scheduler = DDPMScheduler(num_train_timesteps=1000)
scheduler.set_timesteps(25)

unet = torch.compile(unet, backend=backend)

generator = torch.Generator().manual_seed(42)
sample = torch.randn((2, 3, 32, 32), generator=generator)

step_ms = []
for t in scheduler.timesteps:
    t0 = time.perf_counter()
    with torch.no_grad():
        noise_pred = unet(sample, t).sample
    sample = scheduler.step(noise_pred, t, sample, generator=generator).prev_sample
    step_ms.append((time.perf_counter() - t0) * 1e3)

print(f"first step {step_ms[0]:.0f} ms, median step {statistics.median(step_ms[5:]):.2f} ms")
print(f"final sample mean {sample.mean().item():.4f} std {sample.std().item():.4f} "
      f"abs-sum {sample.abs().sum().item():.2f}")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
