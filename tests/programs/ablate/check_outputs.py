"""The accuracy check of script_relu.py: exit 1 when the compiled result differs from eager.

It reads the two results as JSON and needs no torch, as a check that compares saved numbers can
(each rung's check would otherwise spend ~2.5 s of CPU importing torch)."""

import json
import math
import sys
from pathlib import Path

saved = json.loads((Path(sys.argv[1]) / "outputs.json").read_text())
pairs = list(zip(saved["expected"], saved["got"], strict=True))
close = all(math.isclose(e, g, rel_tol=1e-4, abs_tol=1e-4) for e, g in pairs)
sys.exit(0 if close else 1)
