"""Every torch API or config that a recompile fix names (analysis/recompiles/fixes.py), applied
to a small program on the installed torch: the recompiles it explains disappear.

Compiles are counted by a backend that counts the graphs it is handed (``backend="eager"``
behaviour: it runs the graph as traced), so these tests measure Dynamo, not Inductor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch_run


class GraphCounter:
    """A torch.compile backend that counts the graphs (variants) Dynamo compiles."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: Any, example_inputs: Any) -> Callable[..., Any]:
        self.graphs += 1
        return gm.forward


@pytest.fixture
def counter() -> Iterator[GraphCounter]:
    torch._dynamo.reset()
    yield GraphCounter()
    torch._dynamo.reset()


class Scaled(torch.nn.Module):
    """tests/programs/recompiles/counter_attr.py's module: an int counter read in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.num_updates = 0

    def forward(self, x: Any) -> Any:
        self.num_updates += 1
        return x * self.num_updates


def _count_counter_graphs(counter: GraphCounter, calls: int) -> int:
    compiled = torch.compile(Scaled(), backend=counter)
    for _ in range(calls):
        compiled(torch.ones(2))
    return counter.graphs


def test_counter_recompiles_every_call_without_the_fix(counter: GraphCounter) -> None:
    assert _count_counter_graphs(counter, 6) == 6


def test_allow_unspec_int_on_nn_module_makes_the_counter_two_graphs(
    counter: GraphCounter,
) -> None:
    with torch._dynamo.config.patch(allow_unspec_int_on_nn_module=True):
        assert _count_counter_graphs(counter, 6) == 2


def _double(x: Any) -> Any:
    return x * 2


def test_a_plain_int_argument_becomes_dynamic_after_one_recompile(counter: GraphCounter) -> None:
    """Why a fix never calls an int argument "baked in": automatic dynamic handles it."""
    compiled = torch.compile(lambda x, n: x * n, backend=counter)
    for n in range(2, 8):
        compiled(torch.ones(2), n)
    assert counter.graphs == 2


def test_maybe_mark_dynamic_compiles_once_for_every_size(counter: GraphCounter) -> None:
    compiled = torch.compile(_double, backend=counter)
    for size in (4, 5, 6, 7):
        x = torch.ones(size)
        torch._dynamo.maybe_mark_dynamic(x, 0)
        compiled(x)
    assert counter.graphs == 1
    one = torch.ones(1)  # sizes 0 and 1 are specialized even when marked: the fix says so
    torch._dynamo.maybe_mark_dynamic(one, 0)
    compiled(one)
    assert counter.graphs == 2


def test_without_marking_sizes_cost_a_static_and_a_dynamic_compile(counter: GraphCounter) -> None:
    compiled = torch.compile(_double, backend=counter)
    for size in (4, 5, 6, 7):
        compiled(torch.ones(size))
    assert counter.graphs == 2


def test_a_second_layout_compiles_its_own_variant_and_contiguous_removes_it(
    counter: GraphCounter,
) -> None:
    """The layout fix: a transposed tensor of the same sizes is a new variant, marking its
    sizes dynamic does not help, and .contiguous() where it is made does."""
    compiled = torch.compile(_double, backend=counter)
    compiled(torch.ones(4, 8))
    compiled(torch.ones(8, 4).t())
    assert counter.graphs == 2
    torch._dynamo.reset()
    marked = GraphCounter()
    compiled = torch.compile(_double, backend=marked)
    for x in (torch.ones(4, 8), torch.ones(8, 4).t()):
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(x, 1)
        compiled(x)
    assert marked.graphs == 2
    torch._dynamo.reset()
    fixed = GraphCounter()
    compiled = torch.compile(_double, backend=fixed)
    compiled(torch.ones(4, 8))
    compiled(torch.ones(8, 4).t().contiguous())
    assert fixed.graphs == 1


SCALES = {n: float(n) for n in range(1, 64)}


def _lookup(x: Any) -> Any:
    return x * SCALES[x.shape[0]]


def test_mark_dynamic_raises_where_python_code_specializes_the_size(
    counter: GraphCounter,
) -> None:
    """The fix for a size used as a dict key says marking it dynamic raises; it does."""
    compiled = torch.compile(_lookup, backend=counter)
    x = torch.ones(5)
    torch._dynamo.mark_dynamic(x, 0)
    with pytest.raises(Exception) as raised:  # its class lives in a private module
        compiled(x)
    assert type(raised.value).__name__ == "ConstraintViolationError"


def _gpt2_training_graphs(
    counter: GraphCounter,
    loss_type: str | None,
    checkpointing: bool = False,
    use_cache: bool = True,
) -> int:
    """Two training steps of a random-init GPT2LMHeadModel compiled with ``model.compile()``
    and labels given, as a fine-tuning loop calls it (optionally with gradient checkpointing
    and ``use_cache`` in its config); the graphs Dynamo compiled."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64,
                                     n_positions=32, bos_token_id=0, eos_token_id=0)  # fmt: skip
    model = transformers.GPT2LMHeadModel(config)
    if loss_type is not None:
        model.loss_type = loss_type
    if checkpointing:
        # activation_checkpointing_enable replaces gradient_checkpointing_enable in later 5.x
        enable = getattr(model, "activation_checkpointing_enable", None)
        (enable or model.gradient_checkpointing_enable)()
    model.config.use_cache = use_cache
    model.compile(backend=counter)
    for _ in range(2):
        ids = torch.randint(0, 64, (2, 8))
        model(input_ids=ids, labels=ids).loss.backward()
    return counter.graphs


def test_loss_type_joins_gpt2s_loss_to_its_forward(counter: GraphCounter) -> None:
    """GPT2LMHeadModel's class name maps to no transformers loss type, so its `loss_function`
    logs on every call with labels and breaks the graph there. The report names the fix for
    this model, and the fix removes the break: forward and its loss become one graph."""
    import pt2doctor

    break_counts = torch._dynamo.utils.counters["graph_break"]
    break_counts.clear()
    with pt2doctor.watch() as watched:
        unfixed = _gpt2_training_graphs(counter, None)
    (site,) = [
        row
        for row in watched.report()["graph_breaks"]
        if row["site"]["file"].endswith("transformers/modeling_utils.py")
    ]
    assert site["site"]["function"] == "loss_function"
    assert site["category"] == "print_or_logging"
    assert 'Set `model.loss_type = "ForCausalLM"`' in site["advice"]
    assert sum(break_counts.values()) > 0
    torch._dynamo.reset()
    break_counts.clear()
    counter.graphs = 0
    fixed = _gpt2_training_graphs(counter, "ForCausalLM")
    assert sum(break_counts.values()) == 0
    # Unfixed: the model body and the loss, each its own graph. Fixed: one graph.
    assert (unfixed, fixed) == (2, 1)


def test_use_cache_false_compiles_a_checkpointed_gpt2_whole(counter: GraphCounter) -> None:
    """Gradient checkpointing with the config's default use_cache=True: transformers warns from
    a loop of its wrapper on every training call, so Dynamo skips that wrapper and the forward
    compiles in pieces. The skipped frame's finding and the break's advice name the fix, and
    the fix leaves one graph and no break."""
    import pt2doctor

    break_counts = torch._dynamo.utils.counters["graph_break"]
    break_counts.clear()
    with pt2doctor.watch() as watched:
        unfixed = _gpt2_training_graphs(counter, "ForCausalLM", checkpointing=True)
    report = watched.report()
    (site,) = [
        row
        for row in report["graph_breaks"]
        if row["site"]["file"].endswith("transformers/utils/generic.py")
    ]
    assert "Set `model.config.use_cache = False` for training" in site["advice"]
    skipped = [f for f in report["findings"] if f["code"] == "frame_skipped"]
    assert skipped and all("model.config.use_cache = False" in f["advice"] for f in skipped)
    assert sum(break_counts.values()) > 0
    torch._dynamo.reset()
    break_counts.clear()
    counter.graphs = 0
    fixed = _gpt2_training_graphs(counter, "ForCausalLM", checkpointing=True, use_cache=False)
    assert sum(break_counts.values()) == 0
    assert fixed == 1 < unfixed


def _train(counter: GraphCounter, zero_inside: bool) -> tuple[list[float], int]:
    """Three SGD steps of a compiled step function, with ``opt.zero_grad()`` inside it (as
    a blind program wrote it) or called before it (the fix): losses and graph breaks."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x: Any) -> Any:
        if zero_inside:
            opt.zero_grad(set_to_none=True)
        loss = model(x).square().mean()
        loss.backward()
        return loss.detach()

    compiled = torch.compile(step, backend=counter)
    before = dict(torch._dynamo.utils.counters["graph_break"])
    losses = []
    for _ in range(3):
        if not zero_inside:
            opt.zero_grad(set_to_none=True)
        losses.append(float(compiled(torch.ones(3, 4))))
        opt.step()
    breaks = dict(torch._dynamo.utils.counters["graph_break"])
    zero_grad = sum(count - before.get(reason, 0) for reason, count in breaks.items()
                    if "zero_grad" in reason)  # fmt: skip
    return losses, zero_grad


def test_zero_grad_called_outside_the_compiled_step_gives_the_same_losses(
    counter: GraphCounter,
) -> None:
    """library_breaks.py ZERO_GRAD: Optimizer.zero_grad is skipped, so inside a compiled
    function it breaks the graph; called before the compiled call, the same losses and no
    break there."""
    inside, breaks_inside = _train(counter, zero_inside=True)
    torch._dynamo.reset()
    outside, breaks_outside = _train(counter, zero_inside=False)
    assert inside == outside
    assert breaks_inside > 0 and breaks_outside == 0
