"""The case-mode twin of hook_freeze.py: the same classifier as a training cell. pt2doctor
compiles it and trains it for three steps; after the first, the model's own bookkeeping
(``count_step``, kept out of the graph) registers the forward hook that freezes the encoder.
The compiled forward was traced without it, and Dynamo does not guard on module hooks: the
compiled encoder keeps training and the parameters leave eager's. ablate must call this by
design (hooks changed after compile), as it does the program, never a compiler bug."""

import torch
from hook_freeze import Classifier, data
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    x, y = data()
    return Built(
        Classifier().train(),
        (x,),
        loss=lambda out: nn.functional.cross_entropy(out, y),
        optimizer=lambda params: torch.optim.SGD(params, lr=0.5),
    )


CASES = [Case("freeze", build, Matrix(shapes={"b64": 64}, train=(True,)), steps=3)]
