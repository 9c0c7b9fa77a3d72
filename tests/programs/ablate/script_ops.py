"""Custom ops for ``script_custom_op.py`` (imported from there): a wrong fake kernel, as in
``custom_op_fake.py``. A module of its own so a repro has something to import."""

import torch


@torch.library.custom_op("pt2doctor_script::rms_score", mutates_args=())
def rms_score(x: torch.Tensor) -> torch.Tensor:
    return x.pow(2).mean(dim=-1).sqrt()


@rms_score.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)  # MARK: wrong fake
