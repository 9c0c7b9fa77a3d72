"""Plants a layout recompile: the same-sized key tensor arrives contiguous, then as a transposed
view (what a KV cache written by another graph can look like), for several steps each.

Expected: one recompile whose only change is ``keys``'s strides (nothing about its sizes); a
bounded outlook ("a second memory layout"), info severity, the layout fix (.contiguous()), and
a variant table whose two rows give the two strides.
"""

import torch

HEADS = 2
SEQ = 6
DIM = 8
STEPS = 3


@torch.compile(backend="eager")
def attend(query, keys):
    return torch.softmax(query @ keys.transpose(-1, -2), dim=-1)


def main():
    query = torch.randn(HEADS, 1, DIM)
    contiguous = torch.randn(HEADS, SEQ, DIM)
    transposed = torch.randn(SEQ, HEADS, DIM).transpose(0, 1)  # MARK: transposed
    for keys in (contiguous, transposed):
        for _ in range(STEPS):
            attend(query, keys)


if __name__ == "__main__":
    main()
