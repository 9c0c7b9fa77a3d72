"""``pt2doctor run -- python run_user_pass.py``: a program that installs its team's Inductor
pass (``user_passes.channels_last_prep_pass``), which raises while the model compiles."""

import torch
from torch import nn
from user_passes import channels_last_prep_pass

torch._inductor.config.post_grad_custom_post_pass = channels_last_prep_pass

model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
with torch.no_grad():
    torch.compile(model)(torch.randn(4, 8))
