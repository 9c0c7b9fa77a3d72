"""Plants a train/eval loop: a model with dropout trained with grad, evaluated under no_grad.

``model.eval()`` flips ``.training`` of every submodule and ``torch.no_grad()`` turns grad mode
off, so the compiled forward has 2 variants by design (train+grad and eval+no_grad), reused
from then on. Expected: one recompile whose changes fold the submodules' ``.training`` into one
``model.training True -> False`` line plus grad mode; bounded outlook; info severity.
"""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(torch.relu(self.fc(x)))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


EPOCHS = 3


def main():
    torch.manual_seed(0)
    model = Model()
    compiled = torch.compile(model, backend="eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 8)
    for _ in range(EPOCHS):
        model.train()
        for _ in range(2):
            loss = compiled(x).pow(2).mean()  # MARK:train
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
        with torch.no_grad():
            compiled(x)  # MARK:eval
    print("epochs", EPOCHS)


if __name__ == "__main__":
    main()
