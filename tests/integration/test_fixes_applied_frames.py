"""Fixes for a skipped frame, a very large graph and a compiler error, applied:
tests/fixproof.py.

In torch 2.13 a graph break inside a Python loop of the compiled function makes Dynamo skip the
whole function (it runs eagerly). pt2doctor's ``frame_skipped`` finding names the break and
says to remove it, or to compile the loop body as its own function; the fixed programs do one
or the other, and Dynamo no longer skips a frame.

A Python loop that Dynamo unrolls gives one graph of thousands of ops (``large_graph``, over
2000); pt2doctor says to vectorize the loop, and the vectorized program's graph is a few ops.

The failing compiler is torch's test backend ``relu_compile_error_TESTING_ONLY``, which raises
while compiling any graph that calls ``torch.relu``: a stand-in for a backend that cannot
compile one function of the program. pt2doctor's report on the failing program says to put
``torch.compiler.disable`` on the failing function; the fixed program does, and runs.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from fixproof import prove  # noqa: E402

FAILING_BACKEND = "relu_compile_error_TESTING_ONLY"


def squared_relu(h):
    """Primer's squared-ReLU activation."""
    return torch.relu(h) ** 2


class FeedForward(nn.Module):
    def __init__(self, activation, width: int = 8) -> None:
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        self.norm = nn.LayerNorm(width)
        self.activation = activation

    def forward(self, x):
        return self.norm(x + self.down(self.activation(self.up(x))))


def _feedforward(compile, activation):
    model = FeedForward(activation).eval()
    block = compile(model)
    with torch.no_grad():
        return [block(torch.randn(2, 5, 8)) for _ in range(3)]


def feedforward_block(compile):
    return _feedforward(compile, squared_relu)


def feedforward_block_activation_disabled(compile):
    return _feedforward(compile, torch.compiler.disable(squared_relu))


def hinge_loss(scores, labels):
    """Multi-class margin loss: every wrong class within 1 of the right one costs."""
    right = scores.gather(1, labels[:, None])
    margins = torch.relu(1 + scores - right)
    wrong = torch.ones_like(scores).scatter(1, labels[:, None], 0.0)
    return (margins * wrong).sum(dim=1).mean()


def _svm_training(compile, loss_fn):
    model = nn.Linear(6, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def loss_of(x, y):
        return loss_fn(model(x), y)

    loss_of = compile(loss_of)
    losses = []
    for _ in range(4):
        x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
        loss = loss_of(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return {"losses": losses, "weight": model.weight.detach(), "bias": model.bias.detach()}


def svm_training(compile):
    return _svm_training(compile, hinge_loss)


@torch.compiler.disable
def hinge_loss_eager(scores, labels):
    return hinge_loss(scores, labels)


def svm_training_loss_disabled(compile):
    return _svm_training(compile, hinge_loss_eager)


def _fails_to_compile(proof) -> None:
    assert proof.before.error is not None
    assert "ReluCompileError" in repr(proof.before.error)
    codes = {finding["code"] for finding in proof.before.report["findings"]}
    assert "compile_failure" in codes
    assert proof.after.count("failures") == 0
    assert proof.after.graphs >= 1  # the rest of the program is still compiled
    # The disabled function runs eagerly between graphs: a break, as the advice says.
    assert proof.after.count("graph_breaks") >= 1


def test_disable_the_activation_the_backend_cannot_compile() -> None:
    proof = prove(
        "compile_error.disable",
        feedforward_block,
        feedforward_block_activation_disabled,
        backend=FAILING_BACKEND,
    )
    assert proof.shown
    _fails_to_compile(proof)


def test_disable_the_loss_the_backend_cannot_compile() -> None:
    proof = prove(
        "compile_error.disable",
        svm_training,
        svm_training_loss_disabled,
        backend=FAILING_BACKEND,
    )
    assert proof.shown
    _fails_to_compile(proof)


# --- skipped_frame.remove_break: the break inside the loop removed ------------------------------


class TinyDecoder(nn.Module):
    def __init__(self, vocab: int = 11, hidden: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, vocab)


def greedy_decode(compile):
    """Each step's token is read as a Python int (``.item()``) and fed back as a new tensor."""
    model = TinyDecoder().eval()

    def decode(h, token):
        tokens = []
        for _ in range(5):
            h = model.cell(model.embed(torch.tensor([token])), h)
            token = model.out(h).argmax(-1).item()
            tokens.append(token)
        return tokens

    decode = compile(decode)
    with torch.no_grad():
        return [decode(torch.randn(1, 8), start) for start in (1, 2, 3)]


def greedy_decode_tokens_kept(compile):
    """The token stays a tensor inside the loop; the ids are read once, after the compiled call."""
    model = TinyDecoder().eval()

    def decode(h, token):
        tokens = []
        for _ in range(5):
            h = model.cell(model.embed(token), h)
            token = model.out(h).argmax(-1)
            tokens.append(token)
        return torch.cat(tokens)

    decode = compile(decode)
    with torch.no_grad():
        return [decode(torch.randn(1, 8), torch.tensor([start])).tolist() for start in (1, 2, 3)]


def clip_each_branching(grads, max_norm: float):
    """Per-tensor gradient clipping, written with a branch on each gradient's norm."""
    clipped = []
    for grad in grads:
        norm = grad.norm()
        if norm > max_norm:
            grad = grad * (max_norm / norm)
        clipped.append(grad)
    return clipped


def clip_each_branchless(grads, max_norm: float):
    """The same clipping without the branch: the scale is 1 where the norm is within bounds."""
    return [grad * torch.clamp(max_norm / grad.norm(), max=1.0) for grad in grads]


def _clipped_training(compile, clip_each):
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    params = list(model.parameters())
    clip = compile(clip_each)
    losses = []
    for _ in range(3):
        x, y = torch.randn(16, 6), 3 * torch.randn(16, 1)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        for param, grad in zip(params, clip([p.grad for p in params], 0.5), strict=True):
            param.grad = grad
        optimizer.step()
        losses.append(loss.detach())
    return {"losses": losses, "params": [p.detach() for p in params]}


def clipped_training(compile):
    return _clipped_training(compile, clip_each_branching)


def clipped_training_branchless(compile):
    return _clipped_training(compile, clip_each_branchless)


def _not_skipped(proof) -> None:
    codes = {finding["code"] for finding in proof.before.report["findings"]}
    assert "frame_skipped" in codes
    assert proof.after.count("skipped_frames") == 0
    assert proof.after.graphs > proof.before.graphs


def test_remove_the_item_from_a_decoding_loop() -> None:
    proof = prove("skipped_frame.remove_break", greedy_decode, greedy_decode_tokens_kept)
    assert proof.shown
    _not_skipped(proof)
    assert proof.after.count("graph_breaks") == 0


def test_make_the_clipping_branch_in_a_loop_traceable() -> None:
    proof = prove("skipped_frame.remove_break", clipped_training, clipped_training_branchless)
    assert proof.shown
    _not_skipped(proof)
    assert proof.after.count("graph_breaks") == 0


# --- skipped_frame.compile_body: the loop body compiled as its own function ---------------------


class Denoiser(nn.Module):
    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(width + 1, 16), nn.SiLU(), nn.Linear(16, width))

    def forward(self, x, t):
        return self.net(torch.cat([x, t.expand(x.shape[0], 1)], dim=-1))


STEPS = 4


def denoise_step(model, x, step):
    """The sampler's loop body, as its own function."""
    x = x - 0.1 * model(x, torch.full((1, 1), step / STEPS))
    print(f"denoising step {step + 1}/{STEPS}")
    return x


def sample_with_progress(compile):
    """A sampler that prints its progress at every step: the whole sampler is compiled."""
    model = Denoiser().eval()

    def sample(x):
        for step in range(STEPS):
            x = x - 0.1 * model(x, torch.full((1, 1), step / STEPS))
            print(f"denoising step {step + 1}/{STEPS}")
        return x

    sample = compile(sample)
    with torch.no_grad():
        return [sample(torch.randn(3, 4)) for _ in range(2)]


def sample_with_progress_step_compiled(compile):
    """The loop runs in Python; each step (the loop body) is compiled, its print included."""
    model = Denoiser().eval()
    step_fn = compile(denoise_step)

    def sample(x):
        for step in range(STEPS):
            x = step_fn(model, x, step)
        return x

    with torch.no_grad():
        return [sample(torch.randn(3, 4)) for _ in range(2)]


def count_correct(model, x, y):
    """The evaluation loop's body, as its own function."""
    return int((model(x).argmax(-1) == y).sum())


def _batches():
    return [(torch.randn(8, 5), torch.randint(0, 3, (8,))) for _ in range(3)]


def evaluate_accuracy(compile):
    """An evaluation loop over batches, summing each batch's correct count as a Python int."""
    model = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 3)).eval()

    def evaluate(batches):
        correct = 0
        for x, y in batches:
            correct += int((model(x).argmax(-1) == y).sum())
        return correct

    evaluate = compile(evaluate)
    with torch.no_grad():
        return [evaluate(_batches()) for _ in range(2)]


def evaluate_accuracy_batch_compiled(compile):
    model = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 3)).eval()
    batch_correct = compile(count_correct)

    def evaluate(batches):
        return sum(batch_correct(model, x, y) for x, y in batches)

    with torch.no_grad():
        return [evaluate(_batches()) for _ in range(2)]


def test_compile_the_step_of_a_sampler_that_prints() -> None:
    proof = prove(
        "skipped_frame.compile_body", sample_with_progress, sample_with_progress_step_compiled
    )
    assert proof.shown
    _not_skipped(proof)
    # The print still breaks the step's graph, as the advice says.
    assert proof.after.count("graph_breaks") >= 1


def test_compile_the_batch_of_an_evaluation_loop() -> None:
    proof = prove("skipped_frame.compile_body", evaluate_accuracy, evaluate_accuracy_batch_compiled)
    assert proof.shown
    _not_skipped(proof)
    assert proof.after.count("graph_breaks") >= 1


# --- large_graph.vectorize: an unrolled Python loop batched into a few ops ---------------------


def smooth_signal(compile):
    """An exponential moving average over 520 timesteps, one Python step per timestep."""

    def smooth(x, alpha: float):
        m = x[0]
        out = [m]
        for t in range(1, x.shape[0]):
            m = alpha * m + (1 - alpha) * x[t]
            out.append(m)
        return torch.stack(out)

    smooth = compile(smooth)
    return [smooth(torch.randn(520, 3), 0.9) for _ in range(2)]


def smooth_signal_vectorized(compile):
    """The same average as one matrix product: row t weighs x[s] by (1 - alpha) alpha**(t-s),
    and x[0] by alpha**t."""

    def smooth(x, alpha: float):
        t = torch.arange(x.shape[0])
        lag = (t[:, None] - t[None, :]).clamp(min=0)
        weights = torch.tril((1 - alpha) * alpha ** lag.to(x.dtype))
        weights[:, 0] = alpha ** t.to(x.dtype)
        return weights @ x

    smooth = compile(smooth)
    return [smooth(torch.randn(520, 3), 0.9) for _ in range(2)]


def nearest_centroids(compile):
    """k-means' assignment step, one point at a time."""

    def assign(points, centroids):
        labels = []
        for i in range(points.shape[0]):
            distances = ((points[i] - centroids) ** 2).sum(-1)
            labels.append(distances.argmin())
        return torch.stack(labels)

    assign = compile(assign)
    centroids = torch.randn(4, 2)
    return [assign(torch.randn(401, 2), centroids) for _ in range(2)]


def nearest_centroids_batched(compile):
    def assign(points, centroids):
        return ((points[:, None] - centroids[None]) ** 2).sum(-1).argmin(-1)

    assign = compile(assign)
    centroids = torch.randn(4, 2)
    return [assign(torch.randn(401, 2), centroids) for _ in range(2)]


def _smaller_graph(proof) -> None:
    codes = {finding["code"] for finding in proof.before.report["findings"]}
    assert "large_graph" in codes
    was, now = proof.measures["largest_graph_ops"]
    assert was > 2000 and now < 20
    assert "large_graph" not in {finding["code"] for finding in proof.after.report["findings"]}


def test_vectorize_a_moving_average() -> None:
    proof = prove(
        "large_graph.vectorize",
        smooth_signal,
        smooth_signal_vectorized,
        rtol=1e-4,
        atol=1e-5,
    )
    assert proof.shown
    _smaller_graph(proof)


def test_vectorize_a_nearest_centroid_assignment() -> None:
    proof = prove("large_graph.vectorize", nearest_centroids, nearest_centroids_batched)
    assert proof.shown
    _smaller_graph(proof)
