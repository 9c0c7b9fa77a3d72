"""Compare eager vs compiled outputs written to OUT_DIR/outputs.json."""
import json
import math
import os
import sys

RTOL = ATOL = 1e-4


def main(out_dir):
    path = os.path.join(out_dir, "outputs.json")
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL: cannot read {path}: {e}")
        return 1
    expected, got = data["expected"], data["got"]
    if len(expected) != len(got):
        print(f"FAIL: length mismatch: expected {len(expected)}, got {len(got)}")
        return 1
    bad, worst = 0, 0.0
    for e, g in zip(expected, got):
        e, g = float(e), float(g)
        if math.isnan(e) or math.isnan(g):
            ok = math.isnan(e) and math.isnan(g)
            err = 0.0 if ok else math.inf
        else:
            err = abs(e - g)
            ok = err <= ATOL + RTOL * abs(e)
        worst = max(worst, err)
        bad += not ok
    if bad:
        print(f"FAIL: {bad}/{len(expected)} values differ (max abs err {worst:.3g}, rtol=atol={RTOL})")
        return 1
    print(f"OK: {len(expected)} values match (max abs err {worst:.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
