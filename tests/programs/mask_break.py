"""Plants one graph break: boolean-mask indexing ``x[x > 0]`` (output shape depends on data).

Without ``capture_dynamic_output_shape_ops`` Dynamo breaks at MARK:mask.
Expected: one ``data_dependent_shape`` break at MARK:mask.
"""

import torch


def step(x):
    y = x + 1
    z = y[y > 1]  # MARK:mask
    return z * 2


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    x = torch.randn(6)
    torch.testing.assert_close(compiled(x), step(x))


if __name__ == "__main__":
    main()
