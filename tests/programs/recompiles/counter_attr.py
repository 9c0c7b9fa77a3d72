"""Plants a counter attribute: ``self.num_updates`` grows by one per call and ``forward`` reads it.

Dynamo guards ``self.num_updates == N`` (an int attribute of an nn.Module is specialized), so
every call is a new variant: unbounded; with the default ``recompile_limit`` of 8 the frame
would fall back to eager after 8 variants. 5 calls here: 4 recompiles, no limit hit yet.
Expected: changes ``self.num_updates`` old -> new per recompile, unbounded outlook with the
calls left before the limit, warning severity, and Dynamo's HINT
(``allow_unspec_int_on_nn_module``) kept.
"""

import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.num_updates = 0

    def forward(self, x):
        self.num_updates += 1  # MARK:increment
        return self.fc(x) * self.num_updates  # MARK:counter


CALLS = 5


def main():
    torch.manual_seed(0)
    model = Scaled()
    compiled = torch.compile(model, backend="eager")
    x = torch.randn(2, 4)
    for _ in range(CALLS):
        compiled(x)
    print("num_updates", model.num_updates)


if __name__ == "__main__":
    main()
