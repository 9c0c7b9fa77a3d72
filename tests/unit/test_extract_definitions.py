"""What a script-mode repro copies from the program's own source: the definitions it needs,
read with ast and never run; and what it cannot copy, named."""

from __future__ import annotations

import textwrap

from pt2doctor.cases.extract import extract_definitions

PROGRAM = textwrap.dedent("""
    import torch
    import numpy as np
    from torch import nn

    SCALE = 2.0
    model = nn.Linear(4, 4)

    def helper(x):
        return x * SCALE

    def my_pass(graph):
        for node in graph.nodes:
            helper(node)
        return LIMIT

    @torch.library.custom_op("zoo::score", mutates_args=())
    def score(x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1)

    @score.register_fake
    def _(x):
        return x.new_empty(x.shape[:-1])

    score.register_autograd(lambda ctx, g: g, setup_context=None)

    @torch.compile
    def unrelated(x):
        return np.sin(x)

    if __name__ == "__main__":
        LIMIT = 3
        model(torch.randn(2, 4))
""")


def test_a_hook_takes_what_it_references_and_names_what_only_runs() -> None:
    found = extract_definitions(PROGRAM, ["my_pass"], [])
    assert found.found == ["my_pass"]
    assert "def my_pass" in found.source and "def helper" in found.source
    assert "SCALE = 2.0" in found.source and "import" not in found.source  # it imports nothing
    assert "nn.Linear" not in found.source
    assert "unrelated" not in found.source and "__main__" not in found.source
    assert len(found.missing) == 1 and found.missing[0].startswith(
        "LIMIT, which my_pass (line 12) uses"
    )


def test_a_custom_op_takes_its_registrations_and_nothing_decorated_by_torch() -> None:
    found = extract_definitions(PROGRAM, [], ["zoo::score"])
    assert found.found == ["zoo::score"]
    assert '@torch.library.custom_op("zoo::score"' in found.source
    assert "@score.register_fake" in found.source and "score.register_autograd(" in found.source
    assert "def unrelated" not in found.source and found.missing == []
    compile(found.source, "program_defs.py", "exec")  # it is a module of its own
