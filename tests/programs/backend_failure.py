"""Plants a backend compile failure: Dynamo's test backend ``relu_compile_error_TESTING_ONLY``
raises while compiling any graph that calls ``torch.relu``.

The exception (``BackendCompilerFailed``) is caught so the process exits 0; its type is printed.
Expected: a ``compile_error`` failure with ``fail_type`` containing BackendCompilerFailed and a
``compile_failure`` finding.
"""

import torch


def step(x):
    return torch.relu(x) + 1  # MARK:relu


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="relu_compile_error_TESTING_ONLY")
    try:
        compiled(torch.randn(4))
    except Exception as error:
        print(type(error).__name__)
    else:
        raise SystemExit("expected the test backend to fail")


if __name__ == "__main__":
    main()
