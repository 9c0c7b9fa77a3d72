"""A diffusers DDPM sampling loop: a tiny random-init UNet2DModel (nothing downloaded)
compiled whole, stepped by a DDPM scheduler for 3 steps (tests/integration/test_real_programs.py).
Its eight ResnetBlock2D are inlined into one graph, most with weights of their own shape
(32 -> 32, 32 -> 64, 96 -> 64, ...). ``--regional`` compiles each ResnetBlock2D instead, the
regional compilation the advice leaves to be measured. Prints the graphs Dynamo compiled."""

import sys

import torch
from diffusers import DDPMScheduler, UNet2DModel
from diffusers.models.resnet import ResnetBlock2D

torch.manual_seed(0)
unet = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                   block_out_channels=(32, 64), norm_num_groups=8,
                   down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                   up_block_types=("AttnUpBlock2D", "UpBlock2D")).eval()  # fmt: skip
if "--regional" in sys.argv:
    for module in unet.modules():
        if isinstance(module, ResnetBlock2D):
            module.compile(backend="eager")
else:
    unet = torch.compile(unet, backend="eager")  # type: ignore[assignment]  # MARK:compile
scheduler = DDPMScheduler(num_train_timesteps=100)
scheduler.set_timesteps(3)
sample = torch.randn(2, 3, 16, 16)
with torch.no_grad():
    for t in scheduler.timesteps:
        sample = scheduler.step(unet(sample, t).sample, t, sample).prev_sample
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
print(f"mean {float(sample.mean()):.6f}")
