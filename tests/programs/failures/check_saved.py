"""The accuracy check of inline_wrong_pass.py: exit 1 when the compiled outputs it saved differ
from eager's (plain Python, no torch)."""

import json
import math
import sys
from pathlib import Path

saved = json.loads((Path(sys.argv[1]) / "outputs.json").read_text())
pairs = zip(saved["expected"], saved["got"], strict=True)
sys.exit(0 if all(math.isclose(e, g, rel_tol=1e-4, abs_tol=1e-4) for e, g in pairs) else 1)
