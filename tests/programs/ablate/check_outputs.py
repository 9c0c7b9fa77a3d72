"""The accuracy check of script_relu.py: exit 1 when the compiled result differs from eager."""

import sys
from pathlib import Path

import torch

saved = torch.load(Path(sys.argv[1]) / "outputs.pt")
sys.exit(0 if torch.allclose(saved["expected"], saved["got"], atol=1e-4, rtol=1e-4) else 1)
