"""Fixes for breaks in code pt2doctor used to misread, applied: a module-level logging call (its
break is in the logging module), a torch.Generator argument (it was taken for a Python
generator) and a 0-d tensor used as an index (it recompiled per value with no fix):
tests/fixproof.py."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from fixproof import prove  # noqa: E402

# --- logging.info / logging.warning inside the compiled function ----------------------------


def _regressor():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1)), [
        (torch.randn(5, 6), torch.randn(5, 1)) for _ in range(3)
    ]


def regression_step_logs_with_logging_info(compile):
    model, data = _regressor()

    def loss_of(x, y):
        pred = model(x)
        logging.info("batch of %d rows", x.shape[0])
        return nn.functional.mse_loss(pred, y)

    step = compile(loss_of)
    with torch.no_grad():
        return [step(x, y) for x, y in data]


def regression_step_logs_when_not_compiling(compile):
    model, data = _regressor()

    def loss_of(x, y):
        pred = model(x)
        if not torch.compiler.is_compiling():
            logging.info("batch of %d rows", x.shape[0])
        return nn.functional.mse_loss(pred, y)

    step = compile(loss_of)
    with torch.no_grad():
        return [step(x, y) for x, y in data]


def _tokens():
    torch.manual_seed(0)
    return nn.Embedding(20, 8), [torch.randint(0, 20, (3, 7)) for _ in range(3)]


def pooling_warns_with_logging_warning(compile):
    embed, batches = _tokens()

    def pool(ids):
        hidden = embed(ids)
        logging.warning("pooling %d sequences", ids.shape[0])
        return hidden.mean(1)

    step = compile(pool)
    with torch.no_grad():
        return [step(ids) for ids in batches]


def pooling_warns_when_not_compiling(compile):
    embed, batches = _tokens()

    def pool(ids):
        hidden = embed(ids)
        if not torch.compiler.is_compiling():
            logging.warning("pooling %d sequences", ids.shape[0])
        return hidden.mean(1)

    step = compile(pool)
    with torch.no_grad():
        return [step(ids) for ids in batches]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    ("before", "after"),
    [
        (regression_step_logs_with_logging_info, regression_step_logs_when_not_compiling),
        (pooling_warns_with_logging_warning, pooling_warns_when_not_compiling),
    ],
)
def test_a_module_level_logging_call_guarded_by_is_compiling_keeps_one_graph(before, after) -> None:
    proof = prove("logging_module.is_compiling", before, after)
    assert proof.after.count("graph_breaks") == 0
    (row,) = proof.before.report["graph_breaks"]
    assert "logging/__init__.py" not in row["advice"].split("Here ")[-1]


def test_logging_info_in_ignore_logging_functions_keeps_one_graph(
    caplog: pytest.LogCaptureFixture,
) -> None:
    proof = prove(
        "logging_module.ignore_logging_functions",
        regression_step_logs_with_logging_info,
        regression_step_logs_with_logging_info,
        config={"ignore_logging_functions": {logging.info}},
    )
    assert proof.after.count("graph_breaks") == 0


def test_logging_warning_in_ignore_logging_functions_keeps_one_graph() -> None:
    proof = prove(
        "logging_module.ignore_logging_functions",
        pooling_warns_with_logging_warning,
        pooling_warns_with_logging_warning,
        config={"ignore_logging_functions": {logging.warning}},
    )
    assert proof.after.count("graph_breaks") == 0


# --- a torch.Generator passed to a random op ---------------------------------------------------


def denoiser_draws_noise_with_its_generator(compile):
    gen = torch.Generator().manual_seed(7)
    model = nn.Linear(4, 4)

    def noised(x):
        return model(x + 0.1 * torch.randn(x.shape, generator=gen))

    step = compile(noised)
    with torch.no_grad():
        return [step(torch.ones(2, 4)) for _ in range(3)]


def denoiser_noise_drawn_outside(compile):
    gen = torch.Generator().manual_seed(7)
    model = nn.Linear(4, 4)

    def noised(x, noise):
        return model(x + 0.1 * noise)

    step = compile(noised)
    with torch.no_grad():
        return [step(torch.ones(2, 4), torch.randn((2, 4), generator=gen)) for _ in range(3)]


def dropout_mask_from_a_seeded_generator(compile):
    gen = torch.Generator().manual_seed(3)
    weight = torch.randn(6, 3)

    def features(x):
        keep = torch.rand(x.shape, generator=gen) > 0.2
        return (x * keep / 0.8) @ weight

    step = compile(features)
    return [step(torch.randn(4, 6)) for _ in range(3)]


def dropout_mask_drawn_outside(compile):
    gen = torch.Generator().manual_seed(3)
    weight = torch.randn(6, 3)

    def features(x, keep):
        return (x * keep / 0.8) @ weight

    step = compile(features)
    outputs = []
    for _ in range(3):
        x = torch.randn(4, 6)
        outputs.append(step(x, torch.rand(x.shape, generator=gen) > 0.2))
    return outputs


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (denoiser_draws_noise_with_its_generator, denoiser_noise_drawn_outside),
        (dropout_mask_from_a_seeded_generator, dropout_mask_drawn_outside),
    ],
)
def test_random_numbers_of_a_generator_drawn_outside_keep_one_graph(before, after) -> None:
    proof = prove("torch_generator.draw_outside", before, after)
    assert proof.after.count("graph_breaks") == 0
    (row,) = proof.before.report["graph_breaks"]
    assert row["category"] != "python_side_effect"


# --- a 0-d tensor position indexing a cache -----------------------------------------------------


def kv_cache_written_at_tensor_positions(compile):
    torch.manual_seed(0)
    proj = nn.Linear(4, 4)

    def write(cache, pos, x):
        cache[pos] = proj(x)
        return cache.sum(0)

    step = compile(write)
    cache = torch.zeros(8, 4)
    with torch.no_grad():
        return [step(cache, torch.tensor(p), torch.randn(4)).clone() for p in range(6)]


def kv_cache_written_with_index_copy(compile):
    torch.manual_seed(0)
    proj = nn.Linear(4, 4)

    def write(cache, pos, x):
        cache.index_copy_(0, pos.view(1), proj(x).unsqueeze(0))
        return cache.sum(0)

    step = compile(write)
    cache = torch.zeros(8, 4)
    with torch.no_grad():
        return [step(cache, torch.tensor(p), torch.randn(4)).clone() for p in range(6)]


def ring_buffer_read_at_tensor_step(compile):
    torch.manual_seed(0)
    history = torch.randn(10, 3)

    def delayed(step_index, x):
        return x + history[step_index]

    step = compile(delayed)
    return [step(torch.tensor(t), torch.ones(3)) for t in range(5)]


def ring_buffer_read_with_index_select(compile):
    torch.manual_seed(0)
    history = torch.randn(10, 3)

    def delayed(step_index, x):
        return x + history.index_select(0, step_index.view(1)).squeeze(0)

    step = compile(delayed)
    return [step(torch.tensor(t), torch.ones(3)) for t in range(5)]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (kv_cache_written_at_tensor_positions, kv_cache_written_with_index_copy),
        (ring_buffer_read_at_tensor_step, ring_buffer_read_with_index_select),
    ],
)
def test_a_tensor_position_indexed_as_a_tensor_op_compiles_once(before, after) -> None:
    proof = prove("tensor_value.index_copy", before, after)
    assert proof.after.count("compiles") == 1 < proof.before.count("compiles")
