"""Fixes for a recompile cause (the RECOMPILE_ADVICE table), applied: tests/fixproof.py.

Each program recompiles the way a user's code does (a new batch size, a dtype or a layout that
changes between calls, a Python number or an object built anew at each call, a grad mode that
differs between training and evaluation); its ``_fixed`` twin applies the table's fix and
compiles fewer times (for grad_mode.separate: recompiles never, one function per mode compiling
once each), with the same results. Where pt2doctor shows a more specific fix for the same
recompile (its own words for this cause), prove() only needs the recompile finding; where the
table's paragraph itself is shown, the test says so (``proof.shown``). The last tests check
what pt2doctor's specific fix says on some of these programs (each was wrong once).
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import pt2doctor  # noqa: E402
from fixproof import prove  # noqa: E402

F = torch.nn.functional


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


# --- size.mark_dynamic -------------------------------------------------------------------------


def classifier_eval_batch(compile):
    """Static kernels (dynamic=False) for training batches of 8; the evaluation batch is 12."""
    model = _mlp()
    forward = compile(model, dynamic=False)
    outputs = [forward(torch.randn(8, 8)) for _ in range(3)]
    outputs.append(forward(torch.randn(12, 8)))
    return outputs


def classifier_eval_batch_fixed(compile):
    model = _mlp()
    forward = compile(model, dynamic=False)
    outputs = []
    for batch in (8, 8, 8, 12):
        x = torch.randn(batch, 8)
        torch._dynamo.mark_dynamic(x, 0)
        outputs.append(forward(x))
    return outputs


def test_mark_dynamic_serves_the_eval_batch_with_the_training_graph() -> None:
    proof = prove("size.mark_dynamic", classifier_eval_batch, classifier_eval_batch_fixed)
    assert proof.shown
    assert proof.measures["compiles"] == (2, 1)


class Tagger(torch.nn.Module):
    """Token tagger: embeddings, a running-sum context layer and a per-token classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(50, 8)
        self.mix = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + torch.tanh(self.mix(h.cumsum(1)))
        return self.head(h).log_softmax(-1)


_TAG_BATCHES = ((4, 10), (6, 10), (6, 12), (5, 7))


def tagger_batches(compile):
    """The batch size changes first, the sequence length later: one recompile each."""
    tagger = compile(Tagger())
    return [tagger(torch.randint(0, 50, shape)) for shape in _TAG_BATCHES]


def tagger_batches_fixed(compile):
    tagger = compile(Tagger())
    outputs = []
    for shape in _TAG_BATCHES:
        tokens = torch.randint(0, 50, shape)
        torch._dynamo.mark_dynamic(tokens, 0)
        torch._dynamo.mark_dynamic(tokens, 1)
        outputs.append(tagger(tokens))
    return outputs


def test_mark_dynamic_on_batch_and_length_compiles_a_tagger_once() -> None:
    proof = prove("size.mark_dynamic", tagger_batches, tagger_batches_fixed)
    assert proof.measures["compiles"] == (3, 1)
    assert proof.after.graphs == 1


# --- size.buckets ------------------------------------------------------------------------------

_TEXT_LENGTHS = (5, 7, 11, 13, 6)


def _bucket(length: int, buckets=(8, 16)) -> int:
    return next(b for b in buckets if b >= length)


def sentence_embeddings(compile):
    """Mean-pooled token embeddings of texts of every length, with static kernels."""
    embed = torch.nn.Embedding(100, 6)
    proj = torch.nn.Linear(6, 4)

    def encode(tokens):
        return F.normalize(proj(embed(tokens).mean(1)), dim=-1)

    encode = compile(encode, dynamic=False)
    return [encode(torch.randint(1, 100, (2, n))) for n in _TEXT_LENGTHS]


def sentence_embeddings_fixed(compile):
    embed = torch.nn.Embedding(100, 6)
    proj = torch.nn.Linear(6, 4)

    def encode(tokens, mask):
        summed = (embed(tokens) * mask[..., None]).sum(1)
        return F.normalize(proj(summed / mask.sum(1, keepdim=True)), dim=-1)

    encode = compile(encode, dynamic=False)
    outputs = []
    for n in _TEXT_LENGTHS:
        tokens = torch.randint(1, 100, (2, n))
        padded = F.pad(tokens, (0, _bucket(n) - n))  # pad id 0, masked out
        outputs.append(encode(padded, (padded != 0).float()))
    return outputs


def test_length_buckets_bound_a_sentence_encoder_to_two_graphs() -> None:
    proof = prove("size.buckets", sentence_embeddings, sentence_embeddings_fixed)
    assert proof.measures["compiles"] == (5, 2)


def sensor_smoothing(compile):
    """A conv smoother over sensor windows: 60 samples, and a last window of 45."""
    smooth = torch.nn.Conv1d(2, 2, kernel_size=5, padding=2)
    smooth = compile(smooth, dynamic=False)
    return [smooth(torch.randn(1, 2, n)) for n in (60, 60, 45)]


def sensor_smoothing_fixed(compile):
    smooth = torch.nn.Conv1d(2, 2, kernel_size=5, padding=2)
    smooth = compile(smooth, dynamic=False)
    outputs = []
    for n in (60, 60, 45):
        window = F.pad(torch.randn(1, 2, n), (0, 64 - n))  # zeros: the conv's own padding
        outputs.append(smooth(window)[..., :n])
    return outputs


def test_one_bucket_serves_a_short_sensor_window() -> None:
    proof = prove("size.buckets", sensor_smoothing, sensor_smoothing_fixed)
    assert proof.shown
    assert proof.measures["compiles"] == (2, 1)


# --- mark_dynamic.maybe ------------------------------------------------------------------------

_CLASS_WEIGHTS = (1.0, 2.0, 0.5)


def weighted_training_step(compile):
    """A class-weighted loss; every batch has a different number of rows."""
    model = torch.nn.Linear(6, 3)

    def step(x, y, weights):
        return F.cross_entropy(model(x), y, weight=weights)

    step = compile(step)
    weights = torch.tensor(_CLASS_WEIGHTS)
    return [step(torch.randn(n, 6), torch.randint(0, 3, (n,)), weights) for n in (4, 6, 9)]


def _weighted_steps(compile, mark):
    """The step with dim 0 of every tensor of the batch marked, as a generic collate hook
    does: the class weights' dim 0 too, which the model's 3 outputs pin to 3."""
    model = torch.nn.Linear(6, 3)

    def step(x, y, weights):
        return F.cross_entropy(model(x), y, weight=weights)

    step = compile(step)
    weights = torch.tensor(_CLASS_WEIGHTS)
    losses = []
    for n in (4, 6, 9):
        batch = (torch.randn(n, 6), torch.randint(0, 3, (n,)), weights)
        for tensor in batch:
            mark(tensor, 0)
        losses.append(step(*batch))
    return losses


def weighted_training_step_fixed(compile):
    return _weighted_steps(compile, torch._dynamo.maybe_mark_dynamic)


def test_maybe_mark_dynamic_marks_every_batch_tensor_safely() -> None:
    proof = prove("mark_dynamic.maybe", weighted_training_step, weighted_training_step_fixed)
    assert proof.after.graphs == 1
    # The strict form on the same tensors raises: the code specializes the weights' dim.
    torch._dynamo.reset()
    with pytest.raises(Exception, match="Constraints violated"):
        _weighted_steps(lambda fn: torch.compile(fn, backend="eager"), torch._dynamo.mark_dynamic)
    torch._dynamo.reset()


class StepCell(torch.nn.Module):
    """A recurrent cell unrolled over the time steps (a Python loop over x.shape[1])."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(3, 5)
        self.rec = torch.nn.Linear(5, 5)

    def forward(self, x):
        h = x.new_zeros(x.shape[0], 5)
        for t in range(x.shape[1]):
            h = torch.tanh(self.inp(x[:, t]) + self.rec(h))
        return h


def rnn_cell_batches(compile):
    """Static kernels; training batches of 8 and an evaluation batch of 12."""
    cell = compile(StepCell(), dynamic=False)
    return [cell(torch.randn(n, 4, 3)) for n in (8, 8, 12)]


def _rnn_cell_marked(compile, mark):
    cell = compile(StepCell(), dynamic=False)
    outputs = []
    for n in (8, 8, 12):
        x = torch.randn(n, 4, 3)
        mark(x, 0)
        mark(x, 1)  # the time steps: the unrolled loop needs their number
        outputs.append(cell(x))
    return outputs


def rnn_cell_batches_fixed(compile):
    return _rnn_cell_marked(compile, torch._dynamo.maybe_mark_dynamic)


def test_maybe_mark_dynamic_leaves_the_unrolled_time_dim_static() -> None:
    proof = prove("mark_dynamic.maybe", rnn_cell_batches, rnn_cell_batches_fixed)
    assert proof.shown
    assert proof.measures["compiles"] == (2, 1)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="Constraints violated"):
        _rnn_cell_marked(lambda fn, **kw: torch.compile(fn, backend="eager", **kw),
                         torch._dynamo.mark_dynamic)  # fmt: skip
    torch._dynamo.reset()


# --- python_constant.tensor --------------------------------------------------------------------


def denoising_sampler(compile):
    """A sampler loop: the step index t reaches the compiled update as a Python int."""

    def update(x, eps, t):
        alpha = 1.0 - t / 10
        return (x - (1 - alpha) * eps) / math.sqrt(alpha)

    update = compile(update, dynamic=False)
    x = torch.randn(2, 4)
    for t in range(5):
        x = update(x, torch.randn(2, 4), t)
    return x


def denoising_sampler_fixed(compile):
    def update(x, eps, t):
        alpha = 1.0 - t / 10
        return (x - (1 - alpha) * eps) / alpha.sqrt()

    update = compile(update, dynamic=False)
    x = torch.randn(2, 4)
    for t in range(5):
        x = update(x, torch.randn(2, 4), torch.tensor(float(t)))
    return x


def test_a_tensor_step_index_compiles_a_sampler_once() -> None:
    proof = prove("python_constant.tensor", denoising_sampler, denoising_sampler_fixed)
    assert proof.measures["compiles"] == (5, 1)


def cosine_lr_updates(compile):
    """Hand-written SGD with a cosine schedule computed from the step number."""

    def sgd_update(param, grad, step):
        lr = 0.05 * 0.5 * (1 + math.cos(math.pi * step / 20))
        return param - lr * grad

    sgd_update = compile(sgd_update)
    param = torch.randn(5)
    history = []
    for step in range(6):
        param = sgd_update(param, 2 * param, step)
        history.append(param)
    return history


def cosine_lr_updates_fixed(compile):
    def sgd_update(param, grad, step):
        lr = 0.05 * 0.5 * (1 + torch.cos(math.pi * step / 20))
        return param - lr * grad

    sgd_update = compile(sgd_update)
    param = torch.randn(5)
    history = []
    for step in range(6):
        param = sgd_update(param, 2 * param, torch.tensor(float(step)))
        history.append(param)
    return history


def test_a_tensor_step_keeps_a_cosine_schedule_in_one_graph() -> None:
    proof = prove("python_constant.tensor", cosine_lr_updates, cosine_lr_updates_fixed)
    assert proof.measures["compiles"] == (2, 1)


# --- dtype.cast --------------------------------------------------------------------------------


def image_normalization(compile):
    """Images from three loaders: uint8 files, float arrays, int64 decoded pixels."""

    def normalize(img):
        img = img.to(torch.float32) / 255.0
        return (img - 0.5) / 0.25

    normalize = compile(normalize)
    images = [
        torch.randint(0, 256, (3, 4, 4), dtype=torch.uint8),
        torch.rand(3, 4, 4) * 255,
        torch.randint(0, 256, (3, 4, 4), dtype=torch.int64),
    ]
    return [normalize(img) for img in images]


def image_normalization_fixed(compile):
    def normalize(img):
        img = img.to(torch.float32) / 255.0
        return (img - 0.5) / 0.25

    normalize = compile(normalize)
    images = [
        torch.randint(0, 256, (3, 4, 4), dtype=torch.uint8),
        torch.rand(3, 4, 4) * 255,
        torch.randint(0, 256, (3, 4, 4), dtype=torch.int64),
    ]
    return [normalize(img.to(torch.float32)) for img in images]


def test_casting_images_to_float_compiles_normalization_once() -> None:
    proof = prove("dtype.cast", image_normalization, image_normalization_fixed)
    assert proof.measures["compiles"] == (3, 1)


def _label_batches():
    return [
        torch.randint(0, 2, (4, 3)),
        torch.randint(0, 2, (4, 3)).bool(),
        torch.rand(4, 3).round(),
        torch.randint(0, 2, (4, 3), dtype=torch.int32),
    ]


def multilabel_loss(compile):
    """Multi-label targets as each dataset stores them: int64, bool, float, int32."""
    head = torch.nn.Linear(6, 3)

    def loss_fn(features, target):
        return F.binary_cross_entropy_with_logits(head(features), target.float())

    loss_fn = compile(loss_fn)
    return [loss_fn(torch.randn(4, 6), target) for target in _label_batches()]


def multilabel_loss_fixed(compile):
    head = torch.nn.Linear(6, 3)

    def loss_fn(features, target):
        return F.binary_cross_entropy_with_logits(head(features), target.float())

    loss_fn = compile(loss_fn)
    return [loss_fn(torch.randn(4, 6), target.float()) for target in _label_batches()]


def test_float_targets_compile_a_multilabel_loss_once() -> None:
    proof = prove("dtype.cast", multilabel_loss, multilabel_loss_fixed)
    assert proof.measures["compiles"] == (4, 1)


# --- stride.contiguous -------------------------------------------------------------------------


def attention_scores(compile):
    """Keys arrive transposed from one cache and already laid out from another."""

    def scores(q, k_t):
        return torch.softmax(q @ k_t / 2.0, dim=-1)

    scores = compile(scores)
    q = torch.randn(2, 5, 4)
    outputs = []
    for _ in range(3):
        outputs.append(scores(q, torch.randn(2, 5, 4).transpose(1, 2)))
        outputs.append(scores(q, torch.randn(2, 4, 5)))
    return outputs


def attention_scores_fixed(compile):
    def scores(q, k_t):
        return torch.softmax(q @ k_t / 2.0, dim=-1)

    scores = compile(scores)
    q = torch.randn(2, 5, 4)
    outputs = []
    for _ in range(3):
        outputs.append(scores(q, torch.randn(2, 5, 4).transpose(1, 2).contiguous()))
        outputs.append(scores(q, torch.randn(2, 4, 5).contiguous()))
    return outputs


def test_contiguous_keys_compile_attention_scores_once() -> None:
    proof = prove("stride.contiguous", attention_scores, attention_scores_fixed)
    assert proof.measures["compiles"] == (2, 1)


def conv_on_camera_frames(compile):
    """A conv layer fed NHWC camera frames (permuted to NCHW) and NCHW dataset images."""
    conv = compile(torch.nn.Conv2d(3, 4, 3, padding=1))
    outputs = []
    for _ in range(3):
        outputs.append(conv(torch.randn(2, 6, 6, 3).permute(0, 3, 1, 2)))
        outputs.append(conv(torch.randn(2, 3, 6, 6)))
    return outputs


def conv_on_camera_frames_fixed(compile):
    conv = compile(torch.nn.Conv2d(3, 4, 3, padding=1))
    outputs = []
    for _ in range(3):
        outputs.append(conv(torch.randn(2, 6, 6, 3).permute(0, 3, 1, 2).contiguous()))
        outputs.append(conv(torch.randn(2, 3, 6, 6).contiguous()))
    return outputs


def test_contiguous_frames_compile_a_conv_once() -> None:
    proof = prove("stride.contiguous", conv_on_camera_frames, conv_on_camera_frames_fixed)
    assert proof.measures["compiles"] == (2, 1)


# --- requires_grad.consistent ------------------------------------------------------------------


def train_and_val_accuracy(compile):
    """Accuracy of the training logits (they require grad) and of the validation logits
    (computed under no_grad), by the same compiled metric."""
    model = torch.nn.Linear(6, 3)

    def accuracy(logits, labels):
        return (logits.argmax(dim=-1) == labels).float().mean()

    accuracy = compile(accuracy)
    history = []
    for _ in range(3):
        x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
        logits = model(x)
        F.cross_entropy(logits, y).backward()
        history.append(accuracy(logits, y))
        with torch.no_grad():
            val_logits = model(torch.randn(8, 6))
        history.append(accuracy(val_logits, torch.randint(0, 3, (8,))))
    return history


def train_and_val_accuracy_fixed(compile):
    model = torch.nn.Linear(6, 3)

    def accuracy(logits, labels):
        return (logits.argmax(dim=-1) == labels).float().mean()

    accuracy = compile(accuracy)
    history = []
    for _ in range(3):
        x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
        logits = model(x)
        F.cross_entropy(logits, y).backward()
        history.append(accuracy(logits.detach(), y))
        with torch.no_grad():
            val_logits = model(torch.randn(8, 6))
        history.append(accuracy(val_logits, torch.randint(0, 3, (8,))))
    return history


def test_detached_logits_compile_the_metric_once() -> None:
    proof = prove("requires_grad.consistent", train_and_val_accuracy, train_and_val_accuracy_fixed)
    assert proof.measures["compiles"] == (2, 1)


def fgsm_attack(compile):
    """FGSM: the clean pass needs the input's gradient; the adversarial input is detached."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    forward = compile(model)
    outputs = []
    for _ in range(3):
        x, y = torch.randn(5, 4).requires_grad_(), torch.randint(0, 2, (5,))
        (grad,) = torch.autograd.grad(F.cross_entropy(forward(x), y), x)
        x_adv = (x + 0.1 * grad.sign()).detach()
        outputs.append(forward(x_adv))
    return outputs


def fgsm_attack_fixed(compile):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    forward = compile(model)
    outputs = []
    for _ in range(3):
        x, y = torch.randn(5, 4).requires_grad_(), torch.randint(0, 2, (5,))
        (grad,) = torch.autograd.grad(F.cross_entropy(forward(x), y), x)
        x_adv = (x + 0.1 * grad.sign()).detach().requires_grad_()
        outputs.append(forward(x_adv))
    return outputs


def test_adversarial_inputs_that_require_grad_compile_once() -> None:
    proof = prove("requires_grad.consistent", fgsm_attack, fgsm_attack_fixed)
    assert proof.measures["compiles"] == (2, 1)


# --- grad_mode.separate ------------------------------------------------------------------------


def train_and_validate(compile):
    """One compiled loss for the training batches and, under torch.no_grad(), for validation."""
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def loss_fn(x, y):
        return F.cross_entropy(model(x), y)

    loss_fn = compile(loss_fn)
    history = []
    for _epoch in range(2):
        for _ in range(2):
            loss = loss_fn(torch.randn(6, 8), torch.randint(0, 4, (6,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append(loss.detach())
        with torch.no_grad():
            history.append(loss_fn(torch.randn(6, 8), torch.randint(0, 4, (6,))))
    return history


def train_and_validate_fixed(compile):
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_loss(x, y):
        return F.cross_entropy(model(x), y)

    def val_loss(x, y):
        return F.cross_entropy(model(x), y)

    train_loss, val_loss = compile(train_loss), compile(val_loss)
    history = []
    for _epoch in range(2):
        for _ in range(2):
            loss = train_loss(torch.randn(6, 8), torch.randint(0, 4, (6,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append(loss.detach())
        with torch.no_grad():
            history.append(val_loss(torch.randn(6, 8), torch.randint(0, 4, (6,))))
    return history


def test_separate_train_and_validation_losses_never_recompile() -> None:
    # pt2doctor's own words for this recompile ("2 variants by design ... Pre-warm them") come
    # before the table's paragraph: prove() accepts the recompile finding (a fallback fix).
    proof = prove("grad_mode.separate", train_and_validate, train_and_validate_fixed)
    assert proof.measures["recompiles"] == (1, 0)
    assert proof.after.count("compiles") == proof.before.count("compiles") == 2


class TwoTower(torch.nn.Module):
    """A recommender's two towers: user and item embeddings, scored by a dot product."""

    def __init__(self) -> None:
        super().__init__()
        self.users = torch.nn.Embedding(20, 8)
        self.items = torch.nn.Embedding(30, 8)
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, users, items):
        return (self.proj(self.users(users)) * self.items(items)).sum(-1)


def recommender_train_and_serve(compile):
    """The same compiled scorer in the training loop and in the serving path, which ranks 16
    candidate items for a user under torch.inference_mode()."""
    model = TwoTower()
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    score = compile(model)
    served = []
    for _ in range(3):
        users, items = torch.randint(0, 20, (16,)), torch.randint(0, 30, (16,))
        clicks = torch.randint(0, 2, (16,)).float()
        loss = F.binary_cross_entropy_with_logits(score(users, items), clicks)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.inference_mode():
            served.append(score(torch.full((16,), 3), torch.arange(16)).clone())
    return served, model.proj.weight.detach().clone()


def recommender_train_and_serve_fixed(compile):
    model = TwoTower()
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    train_score = compile(model)

    def serve(users, items):
        return model(users, items)

    serve = compile(serve)
    served = []
    for _ in range(3):
        users, items = torch.randint(0, 20, (16,)), torch.randint(0, 30, (16,))
        clicks = torch.randint(0, 2, (16,)).float()
        loss = F.binary_cross_entropy_with_logits(train_score(users, items), clicks)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.inference_mode():
            served.append(serve(torch.full((16,), 3), torch.arange(16)).clone())
    return served, model.proj.weight.detach().clone()


def test_a_separate_serving_function_never_recompiles_the_scorer() -> None:
    proof = prove(
        "grad_mode.separate", recommender_train_and_serve, recommender_train_and_serve_fixed
    )
    assert proof.measures["recompiles"] == (1, 0)
    assert proof.after.count("compiles") == proof.before.count("compiles") == 2


# --- autocast.consistent -----------------------------------------------------------------------


def _focal(logits, target):
    p = torch.sigmoid(logits)
    pt = torch.where(target > 0, p, 1 - p)
    return (-((1 - pt) ** 2) * torch.log(pt.clamp_min(1e-6))).mean()


def focal_loss_train_val(compile):
    """A focal loss called inside the training step's autocast block and in validation,
    outside it (elementwise ops: autocast leaves their float32 math as it is)."""
    focal = compile(_focal)
    losses = []
    for _ in range(3):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            losses.append(focal(torch.randn(4, 3), torch.randint(0, 2, (4, 3))))
        losses.append(focal(torch.randn(4, 3), torch.randint(0, 2, (4, 3))))
    return losses


def focal_loss_train_val_fixed(compile):
    focal = compile(_focal)
    losses = []
    for _ in range(3):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            losses.append(focal(torch.randn(4, 3), torch.randint(0, 2, (4, 3))))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            losses.append(focal(torch.randn(4, 3), torch.randint(0, 2, (4, 3))))
    return losses


def test_autocast_around_every_focal_loss_call_compiles_once() -> None:
    proof = prove("autocast.consistent", focal_loss_train_val, focal_loss_train_val_fixed)
    assert proof.measures["compiles"] == (2, 1)


def amp_after_shape_probe(compile):
    """A dummy call to read the output width, then mixed-precision calls."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    forward = compile(model)
    outputs = [forward(torch.zeros(4, 8)).shape[-1]]
    for _ in range(3):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            outputs.append(forward(torch.randn(4, 8)).float())
    return outputs


def amp_after_shape_probe_fixed(compile):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    forward = compile(model)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        outputs = [forward(torch.zeros(4, 8)).shape[-1]]
    for _ in range(3):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            outputs.append(forward(torch.randn(4, 8)).float())
    return outputs


def test_a_shape_probe_under_autocast_shares_the_amp_graph() -> None:
    proof = prove("autocast.consistent", amp_after_shape_probe, amp_after_shape_probe_fixed)
    assert proof.measures["compiles"] == (2, 1)


# --- device.one --------------------------------------------------------------------------------


def _rbf(a, b):
    d = torch.cdist(a, b)
    return torch.exp(-d * d / 2.0)


def rbf_kernel_meta_probe(compile):
    """The kernel's output shape read from meta tensors (no memory), then real CPU calls."""
    rbf = compile(_rbf)
    probe = rbf(torch.empty(4, 3, device="meta"), torch.empty(5, 3, device="meta"))
    outputs = [list(probe.shape)]
    outputs += [rbf(torch.randn(4, 3), torch.randn(5, 3)) for _ in range(3)]
    return outputs


def rbf_kernel_meta_probe_fixed(compile):
    rbf = compile(_rbf)
    probe = rbf(torch.empty(4, 3), torch.empty(5, 3))
    outputs = [list(probe.shape)]
    outputs += [rbf(torch.randn(4, 3), torch.randn(5, 3)) for _ in range(3)]
    return outputs


def test_probing_on_the_cpu_shares_the_kernels_graph() -> None:
    proof = prove("device.one", rbf_kernel_meta_probe, rbf_kernel_meta_probe_fixed)
    assert proof.shown
    assert proof.measures["compiles"] == (2, 1)


def _patchify(img):
    patches = img.unfold(1, 2, 2).unfold(2, 2, 2)
    return patches.reshape(img.shape[0], -1, 4).mean(-1)


def patch_pooling_meta_probe(compile):
    """How many patches an image gives, read on the meta device, then the pooled patches."""
    patchify = compile(_patchify)
    count = patchify(torch.empty(3, 8, 8, device="meta")).shape[1]
    return [count] + [patchify(torch.randn(3, 8, 8)) for _ in range(3)]


def patch_pooling_meta_probe_fixed(compile):
    patchify = compile(_patchify)
    count = patchify(torch.empty(3, 8, 8)).shape[1]
    return [count] + [patchify(torch.randn(3, 8, 8)) for _ in range(3)]


def test_one_device_for_the_patch_probe_compiles_once() -> None:
    proof = prove("device.one", patch_pooling_meta_probe, patch_pooling_meta_probe_fixed)
    assert proof.shown
    assert proof.measures["compiles"] == (2, 1)


# --- object_id.reuse ---------------------------------------------------------------------------


def _regressor():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


def _train_step(model):
    def train_step(opt, x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    return train_step


def optimizer_per_epoch(compile):
    """A plain-SGD optimizer built anew at the start of each epoch."""
    model = _regressor()
    train_step = compile(_train_step(model))
    losses = []
    for _epoch in range(2):
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        losses += [train_step(opt, torch.randn(6, 4), torch.randn(6, 1))]
    return losses


def optimizer_per_epoch_fixed(compile):
    model = _regressor()
    train_step = compile(_train_step(model))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _epoch in range(2):
        losses += [train_step(opt, torch.randn(6, 4), torch.randn(6, 1))]
    return losses


def test_one_optimizer_for_every_epoch_compiles_the_step_once() -> None:
    proof = prove("object_id.reuse", optimizer_per_epoch, optimizer_per_epoch_fixed)
    assert proof.shown
    # The step's frames (split by backward() and the optimizer's own breaks) still compile,
    # once each: none recompiles.
    assert proof.before.count("recompiles") > 0
    assert proof.after.count("recompiles") == 0


def _round_ste(bits):
    class RoundSTE(torch.autograd.Function):
        """Fake quantization with a straight-through gradient."""

        @staticmethod
        def forward(ctx, x):
            scale = 2**bits - 1
            return torch.round(x * scale) / scale

        @staticmethod
        def backward(ctx, grad):
            return grad

    return RoundSTE


def fake_quant_per_call(compile):
    """Quantization-aware activations: the STE op is built at every call."""
    layer = torch.nn.Linear(4, 4)

    def quantized(x, ste):
        return ste.apply(torch.sigmoid(layer(x)))

    quantized = compile(quantized)
    return [quantized(torch.randn(3, 4), _round_ste(4)) for _ in range(4)]


def fake_quant_per_call_fixed(compile):
    layer = torch.nn.Linear(4, 4)

    def quantized(x, ste):
        return ste.apply(torch.sigmoid(layer(x)))

    quantized = compile(quantized)
    ste = _round_ste(4)
    return [quantized(torch.randn(3, 4), ste) for _ in range(4)]


def test_one_fake_quant_op_compiles_once() -> None:
    proof = prove("object_id.reuse", fake_quant_per_call, fake_quant_per_call_fixed)
    assert proof.measures["compiles"] == (4, 1)


# --- attribute_value.tensor --------------------------------------------------------------------


class MixupConfig:
    def __init__(self) -> None:
        self.ratio = 0.2


def _mix(x, y, perm, ratio):
    return ratio * x + (1 - ratio) * x[perm], ratio * y + (1 - ratio) * y[perm]


def mixup_curriculum(compile):
    """Mixup whose ratio, a config field, is raised once the warmup is over."""
    cfg = MixupConfig()

    def mixup(x, y, perm):
        return _mix(x, y, perm, cfg.ratio)

    mixup = compile(mixup, dynamic=False)
    batches = []
    for ratio in (0.2, 0.2, 0.4):
        cfg.ratio = ratio
        batches.append(mixup(torch.randn(4, 3), torch.randn(4, 2), torch.randperm(4)))
    return batches


def mixup_curriculum_fixed(compile):
    cfg = MixupConfig()

    def mixup(x, y, perm, ratio):
        return _mix(x, y, perm, ratio)

    mixup = compile(mixup, dynamic=False)
    batches = []
    for ratio in (0.2, 0.2, 0.4):
        cfg.ratio = ratio
        batches.append(
            mixup(torch.randn(4, 3), torch.randn(4, 2), torch.randperm(4), torch.tensor(cfg.ratio))
        )
    return batches


def test_a_tensor_mixup_ratio_compiles_once() -> None:
    proof = prove("attribute_value.tensor", mixup_curriculum, mixup_curriculum_fixed)
    assert proof.shown
    assert proof.measures["compiles"] == (2, 1)


class AnnealedSoftmax(torch.nn.Module):
    """Gumbel-style softmax whose temperature the trainer anneals every epoch (an int)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 3)
        self.epoch = 0

    def forward(self, x):
        tau = max(0.5, math.exp(-0.3 * self.epoch))
        return F.softmax(self.proj(x) / tau, -1)


class AnnealedSoftmaxBuffer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 3)
        self.register_buffer("epoch", torch.tensor(0.0))

    def forward(self, x):
        tau = torch.exp(-0.3 * self.epoch).clamp_min(0.5)
        return F.softmax(self.proj(x) / tau, -1)


def annealed_softmax(compile):
    module = AnnealedSoftmax()
    forward = compile(module)
    outputs = []
    for epoch in range(5):
        module.epoch = epoch
        outputs.append(forward(torch.randn(2, 4)))
    return outputs


def annealed_softmax_fixed(compile):
    module = AnnealedSoftmaxBuffer()
    forward = compile(module)
    outputs = []
    for epoch in range(5):
        module.epoch.fill_(epoch)
        outputs.append(forward(torch.randn(2, 4)))
    return outputs


def test_an_epoch_buffer_compiles_an_annealed_softmax_once() -> None:
    proof = prove("attribute_value.tensor", annealed_softmax, annealed_softmax_fixed)
    assert proof.measures["compiles"] == (5, 1)


# --- what pt2doctor's more specific fix says on these programs (each was wrong once) ----------------------


def _recompile_advice(program) -> str:
    """The advice of every recompile finding pt2doctor gives on ``program``, compiled."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    with pt2doctor.watch() as watched:
        program(lambda fn, **kwargs: torch.compile(fn, backend="eager", **kwargs))
    torch._dynamo.reset()
    findings = watched.report()["findings"]
    return " ".join(f["advice"] for f in findings if f["code"] == "recompiles")


def test_the_dtype_fix_names_a_dtype_torch_has() -> None:
    """uint8, float and int64 images: cast to the float dtype (uint8 would truncate)."""
    advice = _recompile_advice(image_normalization)
    assert "torch.Byte" not in advice and ".to(torch.float32)" in advice


def test_the_layout_fix_offers_channels_last_only_for_4d_tensors() -> None:
    advice = _recompile_advice(attention_scores)
    assert "channels_last" not in advice


def test_the_mark_fix_names_every_dim_that_became_dynamic() -> None:
    advice = _recompile_advice(tagger_batches)
    assert "maybe_mark_dynamic(tokens, [0, 1])" in advice  # every dim, one call per tensor


def recommender_serving_inputs_made_outside(compile):
    """recommender_train_and_serve with pt2doctor's inference-tensor fix applied: the serving
    inputs are made outside torch.inference_mode() (the training inputs cannot be made inside
    it: an embedding saves its indices for backward, which inference tensors refuse)."""
    model = TwoTower()
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    score = compile(model)
    served = []
    for _ in range(3):
        users, items = torch.randint(0, 20, (16,)), torch.randint(0, 30, (16,))
        clicks = torch.randint(0, 2, (16,)).float()
        loss = F.binary_cross_entropy_with_logits(score(users, items), clicks)
        opt.zero_grad()
        loss.backward()
        opt.step()
        user, candidates = torch.full((16,), 3), torch.arange(16)
        with torch.inference_mode():
            served.append(score(user, candidates).clone())
    return served, model.proj.weight.detach().clone()


def test_the_inference_tensor_fix_also_names_the_grad_mode_that_changed() -> None:
    """Training and serving through one compiled scorer: the serving inputs are inference
    tensors and the grad mode changed too. The inputs made alike alone still recompile (the
    grad mode is a variant of its own), so the advice names separate functions as well: what
    grad_mode.separate proves on this program (recompiles 1 -> 0)."""
    advice = _recompile_advice(recommender_train_and_serve)
    assert "Make the inputs alike" in advice
    assert "Compile a separate function for each mode" in advice
    torch._dynamo.reset()
    torch.manual_seed(0)
    with pt2doctor.watch() as watched:
        recommender_serving_inputs_made_outside(
            lambda fn, **kwargs: torch.compile(fn, backend="eager", **kwargs)
        )
    torch._dynamo.reset()
    assert watched.report()["summary"]["recompiles"] == 1  # the grad mode's variant
