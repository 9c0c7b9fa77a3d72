"""Fixes for calls Dynamo does not trace, applied: tests/fixproof.py.

Side effects (a generator advanced, state mutated inside a checkpointed function), C extensions
and skipped library calls, explicit breaks, file I/O, ``loss.backward()`` and an iterator's
``next()`` in a compiled step, one-time setup, ``requires_grad_``, RNNs and their packing, and
Python's own random numbers: each fix pt2doctor names for them, applied to two programs.

The ``host_random.torch_rand`` programs draw from torch's RNG where the originals draw from
Python's, so their decisions differ: they are models invariant to the random augmentation (a
reflection of coordinates for a distance-based energy, a reversed token order for a mean-pooled
bag of embeddings), whose results do not depend on what was drawn.
"""

from __future__ import annotations

import copy
import json
import os
import random
import tempfile

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.func import functional_call, stack_module_state, vmap  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

from fixproof import prove  # noqa: E402

_SCRATCH: list[tempfile.TemporaryDirectory[str]] = []


def _scratch():
    """A fresh folder for one program run's files, under a temporary folder removed at exit."""
    if not _SCRATCH:
        _SCRATCH.append(tempfile.TemporaryDirectory(prefix="pt2doctor_calls_"))
    return tempfile.mkdtemp(dir=_SCRATCH[0].name)


def _grads(module):
    return [p.grad.clone() for p in module.parameters() if p.grad is not None]


def _params(module):
    return [p.detach().clone() for p in module.parameters()]


# --- side_effect.outside: a generator advanced inside the compiled function -------------------


def _geometric_sigmas(start, decay):
    sigma = start
    while True:
        yield sigma
        sigma *= decay


class Denoiser(nn.Module):
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(width, 16), nn.SiLU(), nn.Linear(16, width))

    def forward(self, x):
        return self.net(x)


def denoise_with_schedule(compile):
    """A sampler's step draws its noise level from a schedule generator."""
    model = Denoiser().eval()
    schedule = _geometric_sigmas(1.0, 0.7)

    def denoise_step(x):
        sigma = next(schedule)
        return x - sigma * model(x)

    denoise_step = compile(denoise_step)
    x = torch.randn(4, 8)
    samples = []
    with torch.no_grad():
        for _ in range(4):
            x = denoise_step(x)
            samples.append(x)
    return samples


def denoise_with_schedule_drawn_outside(compile):
    model = Denoiser().eval()
    schedule = _geometric_sigmas(1.0, 0.7)

    def denoise_step(x, sigma):
        return x - sigma * model(x)

    denoise_step = compile(denoise_step)
    x = torch.randn(4, 8)
    samples = []
    with torch.no_grad():
        for _ in range(4):
            x = denoise_step(x, torch.tensor(next(schedule)))
            samples.append(x)
    return samples


def test_a_noise_schedule_generator_is_advanced_outside_the_compiled_step() -> None:
    proof = prove("side_effect.outside", denoise_with_schedule, denoise_with_schedule_drawn_outside)
    assert proof.after.count("graph_breaks") == 0


def _running_mean():
    total, count, mean = 0.0, 0, None
    while True:
        value = yield mean
        total, count = total + value, count + 1
        mean = total / count


def validate_with_running_mean(compile):
    """A validation step sends each batch's loss to a running-mean coroutine."""
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).eval()
    tracker = _running_mean()
    next(tracker)

    def validate(x, y):
        loss = F.cross_entropy(model(x), y)
        smoothed = tracker.send(loss.detach())
        return loss, smoothed

    validate = compile(validate)
    batches = [(torch.randn(5, 6), torch.randint(0, 3, (5,))) for _ in range(4)]
    with torch.no_grad():
        return [validate(x, y) for x, y in batches]


def validate_with_running_mean_sent_outside(compile):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).eval()
    tracker = _running_mean()
    next(tracker)

    def validate(x, y):
        return F.cross_entropy(model(x), y)

    validate = compile(validate)
    batches = [(torch.randn(5, 6), torch.randint(0, 3, (5,))) for _ in range(4)]
    results = []
    with torch.no_grad():
        for x, y in batches:
            loss = validate(x, y)
            results.append((loss, tracker.send(loss.detach())))
    return results


def test_a_running_mean_coroutine_is_sent_the_loss_outside_the_compiled_step() -> None:
    proof = prove(
        "side_effect.outside", validate_with_running_mean, validate_with_running_mean_sent_outside
    )
    assert proof.after.count("graph_breaks") == 0


# --- hop_side_effect.return: state mutated inside a checkpointed function ---------------------


class MonitoredBlock(nn.Module):
    """A checkpointed residual block that records its activation norm for monitoring."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.act_norms: list[torch.Tensor] = []

    def _inner(self, x):
        h = self.ff(self.norm(x))
        self.act_norms.append(h.detach().norm())
        return x + h

    def forward(self, x):
        return checkpoint(self._inner, x, use_reentrant=False)


class ReturnsNormBlock(MonitoredBlock):
    def _inner(self, x):
        h = self.ff(self.norm(x))
        return x + h, h.detach().norm()

    def forward(self, x):
        return checkpoint(self._inner, x, use_reentrant=False)


def _train_monitored(compile, block_type, returns_norm):
    blocks = nn.ModuleList([block_type() for _ in range(2)])
    head = nn.Linear(8, 1)

    def forward(x):
        norms = []
        for block in blocks:
            if returns_norm:
                x, norm = block(x)
                norms.append(norm)
            else:
                x = block(x)
                norms.append(block.act_norms[-1])
        return head(x).pow(2).mean(), norms

    forward = compile(forward)
    results = []
    for x in [torch.randn(3, 8) for _ in range(2)]:
        loss, norms = forward(x)
        loss.backward()
        results.append((loss.detach(), norms))
    results.append([_grads(block) for block in blocks])
    return results


def checkpointed_blocks_record_norms(compile):
    return _train_monitored(compile, MonitoredBlock, returns_norm=False)


def checkpointed_blocks_return_norms(compile):
    return _train_monitored(compile, ReturnsNormBlock, returns_norm=True)


def test_a_checkpointed_block_returns_its_norm_instead_of_appending_it() -> None:
    proof = prove(
        "hop_side_effect.return", checkpointed_blocks_record_norms, checkpointed_blocks_return_norms
    )
    assert proof.after.count("graph_breaks") == 0


def _router_forward(x, router, experts, stats):
    """A soft mixture of experts whose load-balancing loss is stored in ``stats``."""
    gates = router(x).softmax(-1)
    out = sum(gates[:, i : i + 1] * expert(x) for i, expert in enumerate(experts))
    load = gates.mean(0)
    stats["balance"] = (load * load).sum() * len(experts)
    return out


def _router_forward_returning(x, router, experts):
    gates = router(x).softmax(-1)
    out = sum(gates[:, i : i + 1] * expert(x) for i, expert in enumerate(experts))
    load = gates.mean(0)
    return out, (load * load).sum() * len(experts)


def _moe_training(compile, returns_balance):
    router = nn.Linear(6, 3)
    experts = nn.ModuleList([nn.Linear(6, 6) for _ in range(3)])
    stats: dict[str, torch.Tensor] = {}

    def loss_fn(x, y):
        if returns_balance:
            out, balance = checkpoint(
                _router_forward_returning, x, router, experts, use_reentrant=False
            )
        else:
            out = checkpoint(_router_forward, x, router, experts, stats, use_reentrant=False)
            balance = stats["balance"]
        return F.mse_loss(out, y) + 0.01 * balance

    loss_fn = compile(loss_fn)
    opt = torch.optim.SGD([*router.parameters(), *experts.parameters()], lr=0.1)
    data = [(torch.randn(4, 6), torch.randn(4, 6)) for _ in range(3)]
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = loss_fn(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(router), _params(experts)


def moe_stores_balance_loss(compile):
    return _moe_training(compile, returns_balance=False)


def moe_returns_balance_loss(compile):
    return _moe_training(compile, returns_balance=True)


def test_a_checkpointed_router_returns_its_balance_loss_instead_of_storing_it() -> None:
    proof = prove("hop_side_effect.return", moe_stores_balance_loss, moe_returns_balance_loss)
    assert proof.after.count("graph_breaks") == 0


# --- builtin.custom_op: a C function on tensors, wrapped as a custom op ------------------------


@torch.library.custom_op("pt2doctor_fixes_calls::interp", mutates_args=())
def interp_op(x: torch.Tensor, xp: torch.Tensor, fp: torch.Tensor) -> torch.Tensor:
    values = np.interp(x.numpy(), xp.numpy(), fp.numpy())
    return torch.from_numpy(values).to(x.dtype)


@interp_op.register_fake
def _(x: torch.Tensor, xp: torch.Tensor, fp: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


XP = [0.0, 0.2, 0.5, 0.8, 1.0]
FP = [0.0, 0.1, 0.55, 0.9, 1.0]


def _scorer():
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1)).eval()


def calibrated_scores(compile):
    """A scorer whose probabilities are calibrated by a piecewise-linear table (np.interp)."""
    model = _scorer()
    xp, fp = np.array(XP), np.array(FP)

    def score(x):
        p = torch.sigmoid(model(x)).squeeze(-1)
        calibrated = np.interp(p.numpy(), xp, fp)
        return torch.from_numpy(calibrated).float() * 100

    score = compile(score)
    with torch.no_grad():
        return [score(torch.randn(6, 5)) for _ in range(3)]


def calibrated_scores_custom_op(compile):
    model = _scorer()
    xp, fp = torch.tensor(XP), torch.tensor(FP)

    def score(x):
        p = torch.sigmoid(model(x)).squeeze(-1)
        return interp_op(p, xp, fp) * 100

    score = compile(score)
    with torch.no_grad():
        return [score(torch.randn(6, 5)) for _ in range(3)]


def test_a_numpy_calibration_table_wrapped_as_a_custom_op_stays_in_the_graph() -> None:
    proof = prove("builtin.custom_op", calibrated_scores, calibrated_scores_custom_op)
    assert proof.after.count("graph_breaks") == 0


@torch.library.custom_op("pt2doctor_fixes_calls::unwrap", mutates_args=())
def unwrap_op(phase: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.unwrap(phase.numpy())).to(phase.dtype)


@unwrap_op.register_fake
def _(phase: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(phase)


def _signals():
    t = torch.linspace(0, 1, 32)
    return [torch.stack([torch.cos(2 * torch.pi * f * t), torch.sin(2 * torch.pi * f * t)])
            for f in (3.0, 5.0, 7.5)]  # fmt: skip


def instantaneous_frequency(compile):
    """Instantaneous frequency of an I/Q signal: the phase, unwrapped with np.unwrap."""

    def frequency(iq):
        phase = torch.atan2(iq[1], iq[0])
        unwrapped = torch.as_tensor(np.unwrap(phase.numpy()))
        return torch.diff(unwrapped) * 31 / (2 * torch.pi)

    frequency = compile(frequency)
    return [frequency(iq) for iq in _signals()]


def instantaneous_frequency_custom_op(compile):
    def frequency(iq):
        phase = torch.atan2(iq[1], iq[0])
        return torch.diff(unwrap_op(phase)) * 31 / (2 * torch.pi)

    frequency = compile(frequency)
    return [frequency(iq) for iq in _signals()]


def test_a_phase_unwrap_wrapped_as_a_custom_op_stays_in_the_graph() -> None:
    proof = prove("builtin.custom_op", instantaneous_frequency, instantaneous_frequency_custom_op)
    assert proof.after.count("graph_breaks") == 0


# --- builtin.move_out: a skipped library call moved out of the compiled step -------------------


def _regression_data():
    x = torch.randn(12, 4)
    return torch.utils.data.TensorDataset(x, x.sum(-1, keepdim=True))


def train_pulls_batches(compile):
    """A training step that pulls its own batch from a DataLoader iterator."""
    model = nn.Linear(4, 1)
    batches = iter(torch.utils.data.DataLoader(_regression_data(), batch_size=4))

    def step():
        x, y = next(batches)
        return F.mse_loss(model(x), y)

    step = compile(step)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = step()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def train_gets_batches(compile):
    model = nn.Linear(4, 1)
    loader = torch.utils.data.DataLoader(_regression_data(), batch_size=4)

    def step(x, y):
        return F.mse_loss(model(x), y)

    step = compile(step)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for x, y in loader:
        opt.zero_grad()
        loss = step(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def test_the_dataloader_is_iterated_outside_the_compiled_step() -> None:
    proof = prove("builtin.move_out", train_pulls_batches, train_gets_batches)
    assert proof.after.count("graph_breaks") == 0


def _adapter_file():
    path = os.path.join(_scratch(), "adapter.pt")
    torch.save({"scale": torch.rand(8) + 0.5, "shift": torch.randn(8)}, path)
    return path


def serve_reloads_adapter(compile):
    """An inference function that loads its adapter weights from disk at every request."""
    backbone = nn.Sequential(nn.Linear(8, 8), nn.Tanh()).eval()
    path = _adapter_file()

    def serve(x):
        adapter = torch.load(path)
        return backbone(x) * adapter["scale"] + adapter["shift"]

    serve = compile(serve)
    with torch.no_grad():
        return [serve(torch.randn(2, 8)) for _ in range(3)]


def serve_loads_adapter_once(compile):
    backbone = nn.Sequential(nn.Linear(8, 8), nn.Tanh()).eval()
    adapter = torch.load(_adapter_file())

    def serve(x, scale, shift):
        return backbone(x) * scale + shift

    serve = compile(serve)
    with torch.no_grad():
        return [serve(torch.randn(2, 8), adapter["scale"], adapter["shift"]) for _ in range(3)]


def test_the_adapter_is_loaded_once_outside_the_compiled_call() -> None:
    proof = prove("builtin.move_out", serve_reloads_adapter, serve_loads_adapter_once)
    assert proof.after.count("graph_breaks") == 0


def _scaled_in_place(compile, check_inside):
    torch.manual_seed(0)
    base = torch.randn(6, 8)
    batches = [base[:3], base[3:], torch.randn(3, 8)]  # two views of one storage, one owner

    def scale_(x):
        # A view shares its storage: copy it before writing in place.
        owned = x.untyped_storage().nbytes() == x.numel() * x.element_size() if check_inside else 1
        if not owned:
            x = x.clone()
        return x.mul_(0.5).add_(1.0)

    scale_ = compile(scale_)
    out = []
    for x in batches:
        if not check_inside and x.untyped_storage().nbytes() != x.numel() * x.element_size():
            x = x.clone()
        out.append(scale_(x))
    return out, base


def scale_checks_storage_inside(compile):
    """An in-place scale that copies a view first, checking the tensor's storage inside the
    compiled function."""
    return _scaled_in_place(compile, check_inside=True)


def scale_checks_storage_outside(compile):
    return _scaled_in_place(compile, check_inside=False)


def test_the_storage_check_moves_out_of_the_compiled_function() -> None:
    proof = prove("builtin.move_out", scale_checks_storage_inside, scale_checks_storage_outside)
    assert proof.after.count("graph_breaks") == 0


# --- disable.remove: a break the code asks for ------------------------------------------------


class Block(nn.Module):
    def __init__(self, width: int = 8, debug_break: bool = False) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(width, 2, batch_first=True)
        self.norm1 = nn.LayerNorm(width)
        self.norm2 = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.debug_break = debug_break

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        if self.debug_break:
            torch._dynamo.graph_break()  # left from bisecting a bad graph
        return x + self.ff(self.norm2(x))


def _encoder(compile, debug_break):
    model = nn.Sequential(Block(debug_break=debug_break), Block(debug_break=debug_break)).eval()
    encode = compile(model)
    with torch.no_grad():
        return [encode(torch.randn(2, 5, 8)) for _ in range(3)]


def encoder_with_debug_break(compile):
    return _encoder(compile, debug_break=True)


def encoder_without_debug_break(compile):
    return _encoder(compile, debug_break=False)


def test_a_leftover_debug_graph_break_is_removed() -> None:
    proof = prove("disable.remove", encoder_with_debug_break, encoder_without_debug_break)
    assert proof.after.count("graph_breaks") == 0


def rotate_half(x, cos, sin):
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-second, first], dim=-1) * sin


@torch.compiler.disable
def rotate_half_disabled(x, cos, sin):
    return rotate_half(x, cos, sin)


def _rotary_attention(compile, rotate):
    qkv = nn.Linear(8, 24)
    angles = torch.arange(6)[:, None] * (1e-2 ** (torch.arange(4) / 4))[None, :]
    cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)

    def attend(x):
        q, k, v = qkv(x).chunk(3, dim=-1)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    attend = compile(attend)
    with torch.no_grad():
        return [attend(torch.randn(2, 6, 8)) for _ in range(3)]


def rotary_attention_disabled_helper(compile):
    """Rotary embeddings in a helper someone once put torch.compiler.disable on."""
    return _rotary_attention(compile, rotate_half_disabled)


def rotary_attention_traced_helper(compile):
    return _rotary_attention(compile, rotate_half)


def test_a_disabled_rotary_helper_is_traced_once_the_decorator_is_removed() -> None:
    proof = prove(
        "disable.remove", rotary_attention_disabled_helper, rotary_attention_traced_helper
    )
    assert proof.after.count("graph_breaks") == 0


# --- io.outside: file I/O in the compiled region ---------------------------------------------


def _tagger():
    return nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 4)).eval()


def _lines(path):
    with open(path) as fh:
        return len(fh.readlines())


def predict_and_log_progress(compile):
    """Batch inference that appends a progress line to a log file from inside the model call."""
    model = _tagger()
    path = os.path.join(_scratch(), "progress.log")

    def predict(x):
        logits = model(x)
        with open(path, "a") as fh:
            fh.write(f"batch of {x.shape[0]}\n")
        return logits.argmax(-1)

    predict = compile(predict)
    with torch.no_grad():
        preds = [predict(torch.randn(3, 6)) for _ in range(3)]
    return preds, _lines(path)


def predict_then_log_progress(compile):
    model = _tagger()
    path = os.path.join(_scratch(), "progress.log")

    def predict(x):
        return model(x).argmax(-1)

    predict = compile(predict)
    preds = []
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(3, 6)
            preds.append(predict(x))
            with open(path, "a") as fh:
                fh.write(f"batch of {x.shape[0]}\n")
    return preds, _lines(path)


def test_a_progress_log_is_written_after_the_compiled_call() -> None:
    proof = prove("io.outside", predict_and_log_progress, predict_then_log_progress)
    assert proof.after.count("graph_breaks") == 0


def _class_weights_file():
    path = os.path.join(_scratch(), "class_weights.json")
    with open(path, "w") as fh:
        json.dump([1.0, 2.5, 0.5, 1.5], fh)
    return path


def _classifier_training(compile, weights_from):
    model = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    path = _class_weights_file()
    data = [(torch.randn(6, 5), torch.randint(0, 4, (6,))) for _ in range(3)]
    step = compile(weights_from(model, path))
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = step(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def weighted_loss_reads_weights(compile):
    """A weighted cross-entropy whose class weights are read from a JSON file at every step."""

    def weights_from(model, path):
        def step(x, y):
            with open(path) as fh:
                weight = torch.tensor(json.load(fh))
            return F.cross_entropy(model(x), y, weight=weight)

        return step

    return _classifier_training(compile, weights_from)


def weighted_loss_gets_weights(compile):
    def weights_from(model, path):
        with open(path) as fh:
            weight = torch.tensor(json.load(fh))

        def step(x, y):
            return F.cross_entropy(model(x), y, weight=weight)

        return step

    return _classifier_training(compile, weights_from)


def test_class_weights_are_read_before_the_compiled_step() -> None:
    proof = prove("io.outside", weighted_loss_reads_weights, weighted_loss_gets_weights)
    assert proof.after.count("graph_breaks") == 0


# --- backward.after_call and other.move_out: backward() and an iterator's next() in the step ---


def _train_regressor(compile, backward_inside):
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]

    def train_step(x, y):
        loss = F.mse_loss(model(x), y)
        if backward_inside:
            loss.backward()
        return loss.detach() if backward_inside else loss

    train_step = compile(train_step)
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = train_step(x, y)
        if not backward_inside:
            loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def train_step_calls_backward(compile):
    """A training step that calls loss.backward() inside the compiled function."""
    return _train_regressor(compile, backward_inside=True)


def train_step_returns_loss(compile):
    return _train_regressor(compile, backward_inside=False)


def test_backward_is_called_on_the_returned_loss_outside_the_compiled_step() -> None:
    proof = prove("backward.after_call", train_step_calls_backward, train_step_returns_loss)
    assert proof.after.count("graph_breaks") == 0


def _autoencoder_steps(compile, backward_inside):
    torch.manual_seed(0)
    encoder, decoder = nn.Linear(12, 3), nn.Linear(3, 12)
    params = [*encoder.parameters(), *decoder.parameters()]
    opt = torch.optim.Adam(params, lr=1e-2)
    batches = [torch.randn(5, 12) for _ in range(3)]

    def reconstruction_step(x):
        loss = F.mse_loss(decoder(torch.tanh(encoder(x))), x)
        if backward_inside:
            loss.backward()
        return loss.detach() if backward_inside else loss

    reconstruction_step = compile(reconstruction_step)
    losses = []
    for x in batches:
        opt.zero_grad()
        loss = reconstruction_step(x)
        if not backward_inside:
            loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, [p.detach().clone() for p in params]


def autoencoder_backward_inside(compile):
    """An autoencoder's step that backpropagates inside the compiled function."""
    return _autoencoder_steps(compile, backward_inside=True)


def autoencoder_backward_after(compile):
    return _autoencoder_steps(compile, backward_inside=False)


def test_the_autoencoder_backpropagates_after_the_compiled_step() -> None:
    proof = prove("backward.after_call", autoencoder_backward_inside, autoencoder_backward_after)
    assert proof.after.count("graph_breaks") == 0


WARMUP = [0.01, 0.02, 0.05, 0.1, 0.1]


def _least_squares_data():
    x = torch.randn(16, 3)
    return x, x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.1 * torch.randn(16, 1)


def gradient_descent_with_warmup(compile):
    """Least squares by gradient descent; each update takes its step size from a warmup list."""
    x, y = _least_squares_data()
    warmup = iter(WARMUP)

    def update(w):
        lr = next(warmup)
        return w - lr * x.T @ (x @ w - y) / x.shape[0]

    update = compile(update)
    w = torch.zeros(3, 1)
    path = []
    for _ in WARMUP:
        w = update(w)
        path.append(w)
    return path


def gradient_descent_warmup_passed_in(compile):
    x, y = _least_squares_data()

    def update(w, lr):
        return w - lr * x.T @ (x @ w - y) / x.shape[0]

    update = compile(update)
    w = torch.zeros(3, 1)
    path = []
    for lr in WARMUP:
        w = update(w, torch.tensor(lr))
        path.append(w)
    return path


def test_the_step_size_iterator_is_advanced_outside_the_compiled_update() -> None:
    proof = prove("other.move_out", gradient_descent_with_warmup, gradient_descent_warmup_passed_in)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.count("compiles") < proof.before.count("compiles")


def _blends(compile, alias_check_inside):
    torch.manual_seed(0)
    frames = [torch.randn(4, 8) for _ in range(3)]

    def blend_(a, b):
        if alias_check_inside and a.data_ptr() == b.data_ptr():  # b aliases a: copy it first
            b = b.clone()
        return a.mul_(0.5).add_(b.flip(0))

    blend_ = compile(blend_)
    out = []
    for a, b in [(frames[0], frames[1]), (frames[2], frames[2]), (frames[1], frames[0])]:
        if not alias_check_inside and a.data_ptr() == b.data_ptr():
            b = b.clone()
        out.append(blend_(a, b).clone())
    return out


def blend_checks_aliasing_inside(compile):
    """An in-place blend of two frames that copies the second when it is the first, checking
    the storage pointers inside the compiled function."""
    return _blends(compile, alias_check_inside=True)


def blend_checks_aliasing_outside(compile):
    return _blends(compile, alias_check_inside=False)


def test_the_aliasing_check_moves_out_of_the_compiled_blend() -> None:
    proof = prove("other.move_out", blend_checks_aliasing_inside, blend_checks_aliasing_outside)
    assert proof.after.count("graph_breaks") == 0


# --- setup.outside: one-time setup inside the compiled function -------------------------------


class Member(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def _members():
    return [Member().eval() for _ in range(4)]


def _ensemble_outputs(predict):
    with torch.no_grad():
        return [predict(torch.randn(5, 8)) for _ in range(2)]


def ensemble_stacks_every_call(compile):
    """An ensemble evaluated with vmap, its weights stacked inside the compiled function."""
    members = _members()

    def predict(x):
        params, buffers = stack_module_state(members)
        template = copy.deepcopy(members[0]).to("meta")

        def one(p, b, inputs):
            return functional_call(template, (p, b), (inputs,))

        probs = vmap(one, in_dims=(0, 0, None))(params, buffers, x).softmax(-1)
        return probs.mean(0), probs.std(0).amax(-1)

    return _ensemble_outputs(compile(predict))


def ensemble_stacked_once(compile):
    members = _members()
    params, buffers = stack_module_state(members)
    template = copy.deepcopy(members[0]).to("meta")

    def one(p, b, inputs):
        return functional_call(template, (p, b), (inputs,))

    def predict(params, buffers, x):
        probs = vmap(one, in_dims=(0, 0, None))(params, buffers, x).softmax(-1)
        return probs.mean(0), probs.std(0).amax(-1)

    predict = compile(predict)
    return _ensemble_outputs(lambda x: predict(params, buffers, x))


def test_an_ensemble_is_stacked_once_outside_the_compiled_function() -> None:
    proof = prove("setup.outside", ensemble_stacks_every_call, ensemble_stacked_once)
    assert proof.after.count("graph_breaks") == 0


class LazyScale(nn.Module):
    """A per-feature gain made on the first forward, when the width is known."""

    def __init__(self) -> None:
        super().__init__()
        self.gain = None

    def forward(self, x):
        if self.gain is None:
            self.gain = nn.Parameter(torch.ones(x.shape[-1]))
        return x * self.gain


class Scale(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * self.gain


def _scaled_training(compile, scale):
    model = nn.Sequential(nn.Linear(5, 6), scale, nn.ReLU(), nn.Linear(6, 1))
    forward = compile(model)
    data = [(torch.randn(4, 5), torch.randn(4, 1)) for _ in range(3)]
    losses = []
    for x, y in data:
        loss = F.mse_loss(forward(x), y)
        loss.backward()
        losses.append(loss.detach())
    return losses, _grads(model)


def lazy_gain_made_in_forward(compile):
    return _scaled_training(compile, LazyScale())


def gain_made_in_init(compile):
    return _scaled_training(compile, Scale(6))


def test_a_lazily_made_parameter_is_made_once_in_init() -> None:
    proof = prove("setup.outside", lazy_gain_made_in_forward, gain_made_in_init)
    assert proof.after.count("graph_breaks") == 0


# --- requires_grad.outside: requires_grad changed inside the compiled function ----------------


def _gan(compile, freeze_inside):
    generator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    critic = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    opt = torch.optim.SGD(generator.parameters(), lr=0.1)
    noise = [torch.randn(8, 4) for _ in range(3)]

    def generator_loss(z):
        if freeze_inside:
            critic.requires_grad_(False)  # the G update needs no critic grads
        loss = F.softplus(-critic(generator(z))).mean()
        if freeze_inside:
            critic.requires_grad_(True)
        return loss

    generator_loss = compile(generator_loss)
    losses = []
    for z in noise:
        opt.zero_grad()
        if not freeze_inside:
            critic.requires_grad_(False)
        loss = generator_loss(z)
        loss.backward()
        if not freeze_inside:
            critic.requires_grad_(True)
        opt.step()
        losses.append(loss.detach())
    critic_grads = sum(p.grad is not None for p in critic.parameters())
    return losses, _params(generator), critic_grads


def gan_generator_step_freezes_critic(compile):
    """A GAN's generator step freezes the critic inside the compiled function."""
    return _gan(compile, freeze_inside=True)


def gan_critic_frozen_around_step(compile):
    return _gan(compile, freeze_inside=False)


def test_the_critic_is_frozen_around_the_compiled_generator_step() -> None:
    proof = prove(
        "requires_grad.outside", gan_generator_step_freezes_critic, gan_critic_frozen_around_step
    )
    assert proof.after.count("graph_breaks") == 0


def _fgsm(compile, requires_grad_inside):
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).eval()
    model.requires_grad_(False)
    data = [(torch.randn(4, 6), torch.randint(0, 3, (4,))) for _ in range(3)]

    def attack_loss(x, y):
        if requires_grad_inside:
            x.requires_grad_()
        return F.cross_entropy(model(x), y)

    attack_loss = compile(attack_loss)
    adversarial = []
    for x, y in data:
        if not requires_grad_inside:
            x.requires_grad_()
        loss = attack_loss(x, y)
        loss.backward()
        adversarial.append((loss.detach(), (x + 0.1 * x.grad.sign()).detach()))
    return adversarial


def fgsm_marks_input_inside(compile):
    """FGSM adversarial examples: the loss function marks its input as requiring grad."""
    return _fgsm(compile, requires_grad_inside=True)


def fgsm_marks_input_before(compile):
    return _fgsm(compile, requires_grad_inside=False)


def test_the_input_is_marked_requiring_grad_before_the_compiled_loss() -> None:
    proof = prove("requires_grad.outside", fgsm_marks_input_inside, fgsm_marks_input_before)
    assert proof.after.count("graph_breaks") == 0


# --- rnn.outside: an RNN inside the compiled model --------------------------------------------


class GRUDecoder(nn.Module):
    def __init__(self, vocab: int = 12, width: int = 8) -> None:
        super().__init__()
        self.embed = nn.Sequential(nn.Embedding(vocab, width), nn.LayerNorm(width))
        self.gru = nn.GRU(width, width, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens, h):
        out, h = self.gru(self.embed(tokens), h)
        return self.head(out[:, -1]).log_softmax(-1), h


def _greedy_decode(step):
    tokens = torch.zeros(2, 1, dtype=torch.long)
    h = torch.zeros(1, 2, 8)
    outputs = []
    with torch.no_grad():
        for _ in range(4):
            logp, h = step(tokens, h)
            tokens = logp.argmax(-1, keepdim=True)
            outputs.append((logp, tokens))
    return outputs


def gru_decoder_compiled_whole(compile):
    """Greedy decoding with a GRU decoder, the whole decoder compiled."""
    return _greedy_decode(compile(GRUDecoder().eval()))


def gru_decoder_compiled_around_gru(compile):
    decoder = GRUDecoder().eval()
    embed = compile(decoder.embed)

    def project(out):
        return decoder.head(out[:, -1]).log_softmax(-1)

    project = compile(project)

    def step(tokens, h):
        out, h = decoder.gru(embed(tokens), h)
        return project(out), h

    return _greedy_decode(step)


def test_a_gru_decoder_compiles_the_parts_around_the_gru() -> None:
    proof = prove("rnn.outside", gru_decoder_compiled_whole, gru_decoder_compiled_around_gru)
    assert proof.after.count("graph_breaks") == 0


class Forecaster(nn.Module):
    """Conv features over a multivariate series, an LSTM over time, a linear forecast."""

    def __init__(self, channels: int = 3, width: int = 8) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(channels, width, 3, padding=1), nn.ReLU())
        self.lstm = nn.LSTM(width, width, batch_first=True)
        self.head = nn.Linear(width, channels)

    def features(self, series):
        return self.conv(series.transpose(1, 2)).transpose(1, 2)

    def forecast(self, out):
        return self.head(out[:, -1])

    def forward(self, series):
        out, _ = self.lstm(self.features(series))
        return self.forecast(out)


def _train_forecaster(model, predict):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = [(torch.randn(4, 10, 3), torch.randn(4, 3)) for _ in range(3)]
    losses = []
    for series, target in data:
        opt.zero_grad()
        loss = F.mse_loss(predict(series), target)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def lstm_forecaster_compiled_whole(compile):
    """Training a conv+LSTM forecaster, the whole model compiled."""
    model = Forecaster()
    return _train_forecaster(model, compile(model))


def lstm_forecaster_compiled_around_lstm(compile):
    model = Forecaster()
    features, forecast = compile(model.features), compile(model.forecast)

    def predict(series):
        out, _ = model.lstm(features(series))
        return forecast(out)

    return _train_forecaster(model, predict)


def test_an_lstm_forecaster_compiles_the_parts_around_the_lstm() -> None:
    proof = prove(
        "rnn.outside", lstm_forecaster_compiled_whole, lstm_forecaster_compiled_around_lstm
    )
    assert proof.after.count("graph_breaks") == 0


# --- packing.padded: pack_padded_sequence before the RNN --------------------------------------


def _token_batches(vocab=20):
    batches = []
    for _ in range(3):
        lengths = torch.randint(2, 7, (4,))
        lengths[0] = 6  # the batch is padded to its longest sequence
        keep = torch.arange(6)[None, :] < lengths[:, None]
        tokens = torch.randint(1, vocab, (4, 6)) * keep
        batches.append((tokens, lengths, torch.randint(0, 3, (4,))))
    return batches


class PackedLSTMClassifier(nn.Module):
    def __init__(self, vocab: int = 20, width: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width, padding_idx=0)
        self.lstm = nn.LSTM(width, width, batch_first=True)
        self.head = nn.Linear(width, 3)

    def forward(self, tokens, lengths):
        x = self.embed(tokens)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.head(h[-1])


class PaddedLSTMClassifier(PackedLSTMClassifier):
    def forward(self, tokens, lengths):
        out, _ = self.lstm(self.embed(tokens))
        last = out.gather(1, (lengths - 1).view(-1, 1, 1).expand(-1, 1, out.size(2)))
        return self.head(last.squeeze(1))


def _train_classifier(compile, model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    forward = compile(model)
    losses = []
    for tokens, lengths, labels in _token_batches():
        opt.zero_grad()
        loss = F.cross_entropy(forward(tokens, lengths), labels)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def lstm_classifier_packs(compile):
    """A text classifier that packs its padded batch for the LSTM and reads the last state."""
    return _train_classifier(compile, PackedLSTMClassifier())


def lstm_classifier_reads_last_step(compile):
    return _train_classifier(compile, PaddedLSTMClassifier())


def test_an_lstm_classifier_reads_the_last_real_step_of_the_padded_batch() -> None:
    proof = prove("packing.padded", lstm_classifier_packs, lstm_classifier_reads_last_step)
    assert proof.before.count("graph_breaks") > proof.after.count("graph_breaks") > 0


class PackedGRUEncoder(nn.Module):
    """A sentence encoder: a GRU over the tokens, the outputs mean-pooled over each sentence."""

    def __init__(self, vocab: int = 20, width: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width, padding_idx=0)
        self.gru = nn.GRU(width, width, batch_first=True)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(
            self.embed(tokens), lengths, batch_first=True, enforce_sorted=False
        )
        out, _ = pad_packed_sequence(self.gru(packed)[0], batch_first=True)
        return out.sum(1) / lengths[:, None]


class PaddedGRUEncoder(PackedGRUEncoder):
    def forward(self, tokens, lengths):
        out, _ = self.gru(self.embed(tokens))
        keep = torch.arange(out.shape[1])[None, :] < lengths[:, None]
        return (out * keep[..., None]).sum(1) / lengths[:, None]


def _sentence_similarity(compile, encoder):
    encode = compile(encoder)
    results = []
    for tokens, lengths, _ in _token_batches():
        emb = encode(tokens, lengths)
        sim = F.cosine_similarity(emb[:, None], emb[None, :], dim=-1)
        sim.triu(1).sum().backward()
        results.append(sim.detach())
    return results, _grads(encoder)


def gru_encoder_packs(compile):
    return _sentence_similarity(compile, PackedGRUEncoder())


def gru_encoder_masks_padding(compile):
    return _sentence_similarity(compile, PaddedGRUEncoder())


def test_a_gru_encoder_masks_the_padding_instead_of_packing() -> None:
    proof = prove("packing.padded", gru_encoder_packs, gru_encoder_masks_padding)
    assert proof.before.count("graph_breaks") > proof.after.count("graph_breaks") > 0


# --- host_random: Python's random numbers in the compiled code -------------------------------

DROP = 0.3
# Dynamo warns once that it cannot trace `random.random` (the break the fix removes).
host_random_warning = pytest.mark.filterwarnings(
    "ignore:Dynamo does not know how to trace the builtin"
)


class LayerDropMLP(nn.Module):
    """Residual MLP trained with LayerDrop: each block is skipped with probability DROP."""

    def __init__(self, width: int = 8, depth: int = 4) -> None:
        super().__init__()
        self.inp = nn.Linear(4, width)
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU())
             for _ in range(depth)]
        )  # fmt: skip
        self.out = nn.Linear(width, 1)

    def forward(self, x):
        x = self.inp(x)
        for blk in self.blocks:
            if self.training and random.random() < DROP:
                continue  # drop this layer for this step
            x = x + blk(x)
        return self.out(x)


class KeepMaskMLP(LayerDropMLP):
    def forward(self, x, keep):
        x = self.inp(x)
        for i, blk in enumerate(self.blocks):
            x = x + keep[i] * blk(x)
        return self.out(x)


def _layerdrop_training(compile, model, forward_with):
    random.seed(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    forward = compile(model)
    data = [(torch.randn(6, 4), torch.randn(6, 1)) for _ in range(4)]
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = F.mse_loss(forward_with(forward, x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def layerdrop_draws_in_forward(compile):
    return _layerdrop_training(compile, LayerDropMLP().train(), lambda forward, x: forward(x))


def layerdrop_keep_mask_passed_in(compile):
    model = KeepMaskMLP().train()

    def forward_with(forward, x):
        keep = torch.tensor([float(random.random() >= DROP) for _ in model.blocks])
        return forward(x, keep)

    return _layerdrop_training(compile, model, forward_with)


@host_random_warning
def test_layerdrop_decisions_are_drawn_outside_and_passed_as_a_keep_mask() -> None:
    proof = prove(
        "host_random.pass_tensor", layerdrop_draws_in_forward, layerdrop_keep_mask_passed_in
    )
    assert proof.after.count("graph_breaks") == 0


def _flip_training(compile, draw_outside):
    random.seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3),
    )  # fmt: skip
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(2, 1, 6, 6), torch.randint(0, 3, (2,))) for _ in range(4)]

    def train_loss(image, label):
        if random.random() < 0.5:
            image = image.flip(-1)  # random horizontal flip
        return F.cross_entropy(model(image), label)

    def train_loss_flip_given(image, label, flip):
        image = torch.where(flip, image.flip(-1), image)
        return F.cross_entropy(model(image), label)

    step = compile(train_loss_flip_given if draw_outside else train_loss)
    losses = []
    for image, label in data:
        opt.zero_grad()
        if draw_outside:
            loss = step(image, label, torch.tensor(random.random() < 0.5))
        else:
            loss = step(image, label)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def random_flip_in_train_step(compile):
    """Random horizontal flips decided with Python's random inside the compiled step."""
    return _flip_training(compile, draw_outside=False)


def random_flip_drawn_outside(compile):
    return _flip_training(compile, draw_outside=True)


@host_random_warning
def test_a_random_flip_is_drawn_outside_and_passed_in() -> None:
    proof = prove("host_random.pass_tensor", random_flip_in_train_step, random_flip_drawn_outside)
    assert proof.after.count("graph_breaks") == 0


class PairEnergy(nn.Module):
    """A molecule's energy from its pairwise distances only (invariant to reflections)."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.pair = nn.Sequential(nn.Linear(1, width), nn.SiLU(), nn.Linear(width, 1))

    def forward(self, coords):
        d = torch.cdist(coords, coords).unsqueeze(-1)
        return self.pair(d).squeeze(-1).triu(1).sum((-1, -2))


def _energy_training(compile, use_torch_rng):
    random.seed(0)
    model = PairEnergy()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(3, 5, 3), torch.randn(3)) for _ in range(4)]

    def energy_loss(coords, energy):
        if random.random() < 0.5:
            coords = -coords  # random reflection augmentation
        return F.mse_loss(model(coords), energy)

    def energy_loss_torch_rng(coords, energy):
        reflect = torch.rand(()) < 0.5
        coords = torch.where(reflect, -coords, coords)
        return F.mse_loss(model(coords), energy)

    step = compile(energy_loss_torch_rng if use_torch_rng else energy_loss)
    losses = []
    for coords, energy in data:
        opt.zero_grad()
        loss = step(coords, energy)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def energy_reflects_with_python_random(compile):
    return _energy_training(compile, use_torch_rng=False)


def energy_reflects_with_torch_rand(compile):
    return _energy_training(compile, use_torch_rng=True)


@host_random_warning
def test_a_reflection_augmentation_draws_from_torch_rand() -> None:
    proof = prove(
        "host_random.torch_rand",
        energy_reflects_with_python_random,
        energy_reflects_with_torch_rand,
    )
    assert proof.after.count("graph_breaks") == 0


class BagOfEmbeddings(nn.Module):
    """A text classifier on the mean of its token embeddings (invariant to token order)."""

    def __init__(self, vocab: int = 30, width: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.head = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 2))

    def forward(self, tokens):
        return self.head(self.embed(tokens).mean(1))


def _bag_training(compile, use_torch_rng):
    random.seed(0)
    model = BagOfEmbeddings()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randint(0, 30, (4, 7)), torch.randint(0, 2, (4,))) for _ in range(4)]

    def loss_fn(tokens, labels):
        if random.random() < 0.5:
            tokens = tokens.flip(1)  # random reversal of the token order
        return F.cross_entropy(model(tokens), labels)

    def loss_fn_torch_rng(tokens, labels):
        reverse = torch.rand(()) < 0.5
        tokens = torch.where(reverse, tokens.flip(1), tokens)
        return F.cross_entropy(model(tokens), labels)

    step = compile(loss_fn_torch_rng if use_torch_rng else loss_fn)
    losses = []
    for tokens, labels in data:
        opt.zero_grad()
        loss = step(tokens, labels)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, _params(model)


def bag_reverses_with_python_random(compile):
    return _bag_training(compile, use_torch_rng=False)


def bag_reverses_with_torch_rand(compile):
    return _bag_training(compile, use_torch_rng=True)


@host_random_warning
def test_a_token_order_reversal_draws_from_torch_rand() -> None:
    proof = prove(
        "host_random.torch_rand", bag_reverses_with_python_random, bag_reverses_with_torch_rand
    )
    assert proof.after.count("graph_breaks") == 0


# A branch on a draw from NumPy's global RNG or a random.Random object: Dynamo traces the NumPy
# draw as a tensor op (the branch then reads a tensor: a data-dependent branch), and
# torch.where on it fails to trace (gb4315); the host-random paragraph's fix is what works.


def _classifier():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3)), [
        torch.randn(4, 8) for _ in range(4)
    ]


def _predict_given(model):
    def predict(x, noisy):
        x = torch.where(noisy, x + 0.0 * x.flip(-1), x)  # an augmentation outputs ignore
        return model(x).softmax(-1)

    return predict


def numpy_draw_in_branch(compile):
    np.random.seed(0)
    model, batches = _classifier()

    def predict(x):
        if np.random.rand() < 0.5:
            x = x + 0.0 * x.flip(-1)
        return model(x).softmax(-1)

    step = compile(predict)
    with torch.no_grad():
        return [step(x) for x in batches]


def numpy_draw_passed_in(compile):
    np.random.seed(0)
    model, batches = _classifier()
    step = compile(_predict_given(model))
    with torch.no_grad():
        return [step(x, torch.tensor(bool(np.random.rand() < 0.5))) for x in batches]


def test_a_branch_on_a_numpy_draw_gets_the_host_random_fix() -> None:
    proof = prove("host_random.pass_tensor", numpy_draw_in_branch, numpy_draw_passed_in)
    assert proof.after.count("graph_breaks") == 0
    assert not any("torch.where(cond, a, b)" in text for text in proof.before.advice())


def random_object_draw_in_branch(compile):
    rng = random.Random(0)
    model, batches = _classifier()

    def predict(x):
        if rng.random() < 0.5:
            x = x + 0.0 * x.flip(-1)
        return model(x).softmax(-1)

    step = compile(predict)
    with torch.no_grad():
        return [step(x) for x in batches]


def random_object_draw_passed_in(compile):
    rng = random.Random(0)
    model, batches = _classifier()
    step = compile(_predict_given(model))
    with torch.no_grad():
        return [step(x, torch.tensor(rng.random() < 0.5)) for x in batches]


@host_random_warning
def test_a_branch_on_a_random_object_draw_gets_the_host_random_fix() -> None:
    proof = prove(
        "host_random.pass_tensor", random_object_draw_in_branch, random_object_draw_passed_in
    )
    assert proof.after.count("graph_breaks") == 0
