"""A diffusers denoising loop: a tiny random-init UNet2DConditionModel (nothing downloaded)
compiled, with classifier-free guidance, stepped by a DDIM scheduler for 3 steps
(tests/integration/test_real_programs.py). Its four BasicTransformerBlocks, in two widths, are
inlined into one graph. ``--regional`` applies the fix pt2doctor prints (regional compilation of
the repeated block). Prints the graphs Dynamo compiled."""

import sys

import torch
from diffusers import DDIMScheduler, UNet2DConditionModel

torch.manual_seed(0)
unet = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                            block_out_channels=(32, 64), norm_num_groups=8,
                            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
                            cross_attention_dim=16, attention_head_dim=8).eval()  # fmt: skip
if "--regional" in sys.argv:  # the fix pt2doctor prints: compile the repeated block only
    unet.compile_repeated_blocks(backend="eager")
else:
    unet = torch.compile(unet, backend="eager")  # MARK:compile
scheduler = DDIMScheduler(num_train_timesteps=100)
scheduler.set_timesteps(3)
text = torch.randn(2, 7, 16)  # (unconditional, conditional) prompt embeddings
latents = torch.randn(1, 4, 8, 8)
with torch.no_grad():
    for t in scheduler.timesteps:  # MARK:loop
        noise = unet(torch.cat([latents] * 2), t, encoder_hidden_states=text).sample
        uncond, cond = noise.chunk(2)
        latents = scheduler.step(uncond + 7.5 * (cond - uncond), t, latents).prev_sample
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
