"""Fixes for a compiled frame's state (an optimizer's hyperparameters a scheduler rewrites, a
module's hooks, inference tensors, a grad mode), applied: tests/fixproof.py.

Each program recompiles the way a user's code does: an LR scheduler writes a new float learning
rate (or a new momentum) into the param group that a compiled optimizer step guards on, a
feature extractor attaches forward hooks for some calls only, a warmup input is made on the
other side of ``torch.inference_mode()`` than the requests, a training step and an evaluation
under ``inference_mode`` share one compiled function. Its ``_fixed`` twin applies the paragraph
pt2doctor gives for it and compiles fewer times (for grad_mode_too.separate: recompiles never,
one function per mode compiling once each), with the same results as the program run eagerly.

Backends: ``eager`` where it behaves as Inductor does for the program; ``aot_eager`` where the
eager backend hides the recompiles (it turns a changing float into a dynamic one after one
recompile, which Inductor's and AOTAutograd's use of SGD's lr as ``alpha=`` and of Adam's
``betas`` as numbers does not allow: there the step recompiles for every value, as in
tests/programs/run/run_cycled_momentum.py, which is Inductor's).

hooks.register_once is a fix for wrong results: registering the hooks once and switching them
with a flag makes the results right (the hooks attached later no longer meet a graph traced
without them), but the flag is guarded as the hook count was, so each of its states compiles a
variant and the compiles stay as many (2 -> 2 here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from fixproof import prove  # noqa: E402

_SOURCE_LINES = Path(__file__).read_text(encoding="utf-8").splitlines()

# --- lr_tensor.tensor_lr -----------------------------------------------------------------------

LR = 0.05


class DigitCNN(nn.Module):
    """A small digit classifier: one convolution, global average pooling, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).mean((2, 3)))


def cnn_cosine_compiled_step(compile):
    """torch.compile(opt.step) for an SGD-with-momentum CNN, with CosineAnnealingLR writing
    the learning rate (a float) after each step."""
    model = DigitCNN()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    opt_step = compile(opt.step)
    losses = []
    for _ in range(4):
        x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt_step()
        sched.step()
        losses.append(loss.detach())
    return losses, [p.detach().clone() for p in model.parameters()]


def cnn_cosine_compiled_step_fixed(compile):
    model = DigitCNN()
    opt = torch.optim.SGD(model.parameters(), lr=torch.tensor(LR), momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    opt_step = compile(opt.step)
    losses = []
    for _ in range(4):
        x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt_step()
        sched.step()
        losses.append(loss.detach())
    return losses, [p.detach().clone() for p in model.parameters()]


def test_a_tensor_lr_compiles_the_cosine_annealed_sgd_step_once() -> None:
    # SGD uses the lr as `alpha=-lr`, a number: with AOTAutograd (and Inductor) every new
    # value is a variant; the tensor lr leaves the momentum buffers' one recompile.
    proof = prove(
        "lr_tensor.tensor_lr",
        cnn_cosine_compiled_step,
        cnn_cosine_compiled_step_fixed,
        backend="aot_eager",
    )
    assert proof.shown
    assert proof.before.count("recompiles") == 3
    assert proof.after.count("recompiles") == 1
    assert proof.measures["compiles"] == (7, 5)


VOCAB = 16


class NextToken(nn.Module):
    """A tiny next-token model: embeddings, a running-sum context layer, an output layer."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.mix = nn.Linear(16, 16)
        self.out = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)
        return self.out(torch.tanh(self.mix(h.cumsum(1))))


def _warmup(step):
    return min(1.0, (step + 1) / 3)


def lm_warmup_train_step(compile):
    """A compiled training step (forward, backward, AdamW step) of a small language model, with
    a linear LR warmup (LambdaLR) stepped after each training step."""
    model = NextToken()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _warmup)

    def train_step(tokens):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    train_step = compile(train_step)
    losses = []
    for _ in range(4):
        losses.append(train_step(torch.randint(0, VOCAB, (4, 9))))
        sched.step()
    return losses, [p.detach().clone() for p in model.parameters()]


def lm_warmup_train_step_fixed(compile):
    model = NextToken()
    opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(LR), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _warmup)

    def train_step(tokens):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    train_step = compile(train_step)
    losses = []
    for _ in range(4):
        losses.append(train_step(torch.randint(0, VOCAB, (4, 9))))
        sched.step()
    return losses, [p.detach().clone() for p in model.parameters()]


def test_a_tensor_lr_compiles_the_warmed_up_adamw_step_once() -> None:
    proof = prove("lr_tensor.tensor_lr", lm_warmup_train_step, lm_warmup_train_step_fixed)
    assert proof.shown
    assert proof.before.count("recompiles") == 1
    assert proof.after.count("recompiles") == 0
    assert proof.measures["compiles"] == (8, 7)


# --- momentum.step_outside ---------------------------------------------------------------------

STEPS = 4


class BagClassifier(nn.Module):
    """A bag-of-words text classifier: mean-pooled token embeddings and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.EmbeddingBag(100, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def text_classifier_one_cycle(compile):
    """A compiled training step (forward, backward, AdamW step) under OneCycleLR, which cycles
    AdamW's betas[0] with the learning rate (a tensor lr already: only the momentum is left)."""
    model = BagClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(0.01))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=STEPS + 1)

    def train_step(tokens, labels):
        loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    train_step = compile(train_step)
    losses = []
    for _ in range(STEPS):
        losses.append(train_step(torch.randint(0, 100, (8, 12)), torch.randint(0, 3, (8,))))
        sched.step()
    return losses, [p.detach().clone() for p in model.parameters()]


def text_classifier_one_cycle_fixed(compile):
    model = BagClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(0.01))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=STEPS + 1)

    def forward_backward(tokens, labels):
        loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        return loss.detach()

    forward_backward = compile(forward_backward)
    losses = []
    for _ in range(STEPS):
        losses.append(forward_backward(torch.randint(0, 100, (8, 12)), torch.randint(0, 3, (8,))))
        opt.step()
        opt.zero_grad()
        sched.step()
    return losses, [p.detach().clone() for p in model.parameters()]


def test_the_one_cycle_momentum_stops_recompiling_with_the_step_outside() -> None:
    proof = prove(
        "momentum.step_outside",
        text_classifier_one_cycle,
        text_classifier_one_cycle_fixed,
        backend="aot_eager",
    )
    assert proof.shown
    assert proof.before.count("recompiles") == STEPS - 1
    assert proof.after.count("recompiles") == 0
    assert proof.measures["compiles"][1] == 2  # the forward, and what follows backward()


class Denoiser(nn.Module):
    """A small denoising autoencoder for 12-feature sensor readings."""

    def __init__(self) -> None:
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(12, 6), nn.GELU())
        self.decode = nn.Linear(6, 12)

    def forward(self, x):
        return self.decode(self.encode(x))


def denoiser_cyclic_lr(compile):
    """A denoising autoencoder's whole step compiled (zero_grad, forward, backward, Adam step),
    under CyclicLR, which cycles Adam's betas[0] between 0.8 and 0.9 (cycle_momentum)."""
    model = Denoiser()
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(1e-3))
    sched = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=1e-3, max_lr=1e-2, step_size_up=2)

    @compile
    def step(noisy, clean):
        opt.zero_grad()
        loss = F.mse_loss(model(noisy), clean)
        loss.backward()
        opt.step()
        return loss.detach()

    losses = []
    for _ in range(STEPS):
        clean = torch.randn(16, 12)
        losses.append(step(clean + 0.1 * torch.randn_like(clean), clean))
        sched.step()
    return losses, [p.detach().clone() for p in model.parameters()]


def denoiser_cyclic_lr_fixed(compile):
    model = Denoiser()
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(1e-3))
    sched = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=1e-3, max_lr=1e-2, step_size_up=2)

    @compile
    def forward_backward(noisy, clean):
        loss = F.mse_loss(model(noisy), clean)
        loss.backward()
        return loss.detach()

    losses = []
    for _ in range(STEPS):
        clean = torch.randn(16, 12)
        opt.zero_grad()
        losses.append(forward_backward(clean + 0.1 * torch.randn_like(clean), clean))
        opt.step()
        sched.step()
    return losses, [p.detach().clone() for p in model.parameters()]


def test_the_cyclic_momentum_stops_recompiling_with_the_step_outside() -> None:
    proof = prove(
        "momentum.step_outside",
        denoiser_cyclic_lr,
        denoiser_cyclic_lr_fixed,
        backend="aot_eager",
    )
    assert proof.shown
    assert proof.before.count("recompiles") >= 2
    assert proof.after.count("recompiles") == 0


# --- hooks.register_once (the fix applied: right results, as many compiles) ---------------------


class FeatureCNN(nn.Module):
    """A small image classifier whose middle block a feature bank reads."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU())
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(self.block(self.stem(x)).mean((2, 3)))


def feature_bank_hooks(compile):
    """A compiled classifier in eval; every 3rd batch goes into a feature bank: a forward hook
    on the middle block is registered for that batch and removed after it."""
    model = FeatureCNN().eval()
    predict = compile(model)
    features, bank, logits = {}, [], []

    def keep(module, inputs, output):
        features["block"] = output.mean((2, 3))

    with torch.no_grad():
        for i in range(6):
            images = torch.randn(2, 3, 16, 16)
            collect = i % 3 == 0
            handle = model.block.register_forward_hook(keep) if collect else None
            logits.append(predict(images))
            if handle is not None:
                bank.append(features.pop("block", None))
                handle.remove()
    return logits, bank


def feature_bank_hooks_fixed(compile):
    model = FeatureCNN().eval()
    predict = compile(model)
    features, bank, logits = {}, [], []
    collecting = {"on": False}

    def keep(module, inputs, output):
        if collecting["on"]:
            features["block"] = output.mean((2, 3))

    model.block.register_forward_hook(keep)
    with torch.no_grad():
        for i in range(6):
            images = torch.randn(2, 3, 16, 16)
            collecting["on"] = i % 3 == 0
            logits.append(predict(images))
            if collecting["on"]:
                bank.append(features.pop("block", None))
    return logits, bank


class ActivationMonitor:
    """Logs the mean activation norm of some layers through forward hooks."""

    def __init__(self, layers) -> None:
        self.layers = layers
        self.stats: dict[str, torch.Tensor] = {}
        self.handles: list = []
        self.active = False

    def hook(self, name):
        def record(module, inputs, output):
            self.stats[name] = output.detach().norm(dim=-1).mean()

        return record

    def gated_hook(self, name):
        def record(module, inputs, output):
            if self.active:
                self.stats[name] = output.detach().norm(dim=-1).mean()

        return record

    def attach(self):
        self.handles = [layer.register_forward_hook(self.hook(name))
                        for name, layer in self.layers.items()]  # fmt: skip

    def detach(self):
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def read(self):
        stats, self.stats = self.stats, {}
        return [stats.get(name) for name in self.layers]


def _regressor():
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 1))  # fmt: skip


def training_activation_logging(compile):
    """A compiled regressor in training; every 3rd step an activation monitor attaches hooks to
    the two hidden layers, logs their activation norms, and detaches them."""
    model = _regressor()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    forward = compile(model)
    monitor = ActivationMonitor({"hidden1": model[0], "hidden2": model[2]})
    losses, logged = [], []
    for step in range(6):
        x = torch.randn(8, 6)
        if step % 3 == 0:
            monitor.attach()
        loss = F.mse_loss(forward(x), x.sum(1, keepdim=True))
        if step % 3 == 0:
            logged.append(monitor.read())
            monitor.detach()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, logged


def training_activation_logging_fixed(compile):
    model = _regressor()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    forward = compile(model)
    monitor = ActivationMonitor({"hidden1": model[0], "hidden2": model[2]})
    for name, layer in monitor.layers.items():
        layer.register_forward_hook(monitor.gated_hook(name))
    losses, logged = [], []
    for step in range(6):
        x = torch.randn(8, 6)
        monitor.active = step % 3 == 0
        loss = F.mse_loss(forward(x), x.sum(1, keepdim=True))
        if monitor.active:
            logged.append(monitor.read())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, logged


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (feature_bank_hooks, feature_bank_hooks_fixed),
        (training_activation_logging, training_activation_logging_fixed),
    ],
)
def test_hooks_registered_once_give_the_eager_results_in_as_many_compiles(before, after) -> None:
    """pt2doctor gives HOOKS_FIX on both programs; applied, it makes the compiled results the
    eager ones (the program as written runs a graph traced without the hooks when they are
    attached again: its bank or its log loses their features). The flag the hooks read is
    guarded as the hook count was, one variant per state, so the compiles do not drop: a fix
    for wrong results (catalog kind ``results``), as its paragraph now says."""
    proof = prove("hooks.register_once", before, after)
    assert proof.shown
    assert proof.before.count("compiles") == proof.after.count("compiles") == 2
    assert proof.after.count("recompiles") == 1  # on the flag, as it was on the hook count


# --- inference_mode.alike, inference_tensor.alike --------------------------------------------------------------------


def _scorer():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def server_warmup_in_inference_mode(compile):
    """A model server warms its compiled model up at startup under torch.inference_mode(), then
    serves requests under torch.no_grad() (grad off for every call)."""
    model = _scorer().eval()
    predict = compile(model)
    with torch.inference_mode():
        served = [predict(torch.zeros(4, 8)).clone()]
    with torch.no_grad():
        for _ in range(3):
            served.append(predict(torch.randn(4, 8)))
    return served


def server_warmup_in_inference_mode_fixed(compile):
    model = _scorer().eval()
    predict = compile(model)
    with torch.no_grad():
        served = [predict(torch.zeros(4, 8)).clone()]
    with torch.no_grad():
        for _ in range(3):
            served.append(predict(torch.randn(4, 8)))
    return served


def test_a_warmup_made_as_the_requests_are_serves_them() -> None:
    proof = prove(
        "inference_mode.alike",
        server_warmup_in_inference_mode,
        server_warmup_in_inference_mode_fixed,
    )
    assert proof.shown
    assert proof.measures["compiles"] == (2, 1)
    # Each variant's calling line and the `with` around it, from the run's compile-start
    # stacks and this file: the parameters' keys tell the mode, not "an inference tensor".
    advice = " ".join(proof.before.advice())
    start = next(i for i, line in enumerate(_SOURCE_LINES, 1)
                 if line.startswith("def server_warmup_in_inference_mode("))  # fmt: skip
    lines = {text.strip(): n for n, text in enumerate(_SOURCE_LINES[start : start + 10], start + 1)}
    warmup, serve = lines["served = [predict(torch.zeros(4, 8)).clone()]"], lines[
        "served.append(predict(torch.randn(4, 8)))"]  # fmt: skip
    assert (
        f"call at test_fixes_applied_state.py:{warmup} (`served = [predict(torch.zeros(4, "
        f"8)).clone()]`, in server_warmup_in_inference_mode) ran under "
        f"`torch.inference_mode()` (line {lines['with torch.inference_mode():']})"
    ) in advice
    assert (
        f"test_fixes_applied_state.py:{serve} (`served.append(predict(torch.randn(4, 8)))`, "
        "in server_warmup_in_inference_mode) ran outside `torch.inference_mode()` (under "
        f"`torch.no_grad()`, line {lines['with torch.no_grad():']})"
    ) in advice
    assert "fn[" not in advice and "weight" not in advice  # the parameters are not the cause


def inference_handler_after_no_grad_warmup(compile):
    """An image service: warmed up at startup under torch.no_grad(); its request handler is
    decorated with @torch.inference_mode() and scales the raw pixels before the model."""
    model = DigitCNN().eval()
    predict = compile(model)
    with torch.no_grad():
        predict(torch.zeros(2, 1, 8, 8))

    @torch.inference_mode()
    def handle(pixels):
        return predict(pixels / 255.0).softmax(-1).clone()

    return [handle(torch.randint(0, 256, (2, 1, 8, 8)).float()) for _ in range(3)]


def inference_handler_after_no_grad_warmup_fixed(compile):
    model = DigitCNN().eval()
    predict = compile(model)

    @torch.inference_mode()
    def handle(pixels):
        return predict(pixels / 255.0).softmax(-1).clone()

    handle(torch.zeros(2, 1, 8, 8))  # the warmup through the handler, as requests are made
    return [handle(torch.randint(0, 256, (2, 1, 8, 8)).float()) for _ in range(3)]


def test_a_warmup_through_the_inference_mode_handler_serves_the_requests() -> None:
    proof = prove(
        "inference_mode.alike",
        inference_handler_after_no_grad_warmup,
        inference_handler_after_no_grad_warmup_fixed,
    )
    assert proof.shown
    assert proof.measures["compiles"] == (2, 1)


def preprocessed_in_inference_mode(compile):
    """A service that preprocesses each request under torch.inference_mode() (a decorated
    helper) and calls the compiled model under torch.no_grad(); it was warmed up with a batch
    made under no_grad: the requests are inference tensors, the warmup was not."""
    model = DigitCNN().eval()
    predict = compile(model)

    @torch.inference_mode()
    def preprocess(pixels):
        return pixels / 255.0

    with torch.no_grad():
        predict(torch.zeros(2, 1, 8, 8))
        return [predict(preprocess(torch.randint(0, 256, (2, 1, 8, 8)).float()))
                for _ in range(3)]  # fmt: skip


def preprocessed_in_inference_mode_fixed(compile):
    model = DigitCNN().eval()
    predict = compile(model)

    @torch.inference_mode()
    def preprocess(pixels):
        return pixels / 255.0

    with torch.no_grad():
        predict(preprocess(torch.zeros(2, 1, 8, 8)))  # the warmup made as requests are
        return [predict(preprocess(torch.randint(0, 256, (2, 1, 8, 8)).float()))
                for _ in range(3)]  # fmt: skip


def test_an_inference_tensor_called_under_no_grad_is_named() -> None:
    """Both calls under no_grad: the guarded dispatch keys differ by AutogradCPU alone (was
    "inputs arrive on different devices")."""
    proof = prove(
        "inference_tensor.alike",
        preprocessed_in_inference_mode,
        preprocessed_in_inference_mode_fixed,
    )
    assert proof.shown


def scores_cached_and_live(compile):
    """An evaluation that builds its reference batch once, at startup, under
    torch.inference_mode() (a cache), then scores it and a live batch each round under
    torch.no_grad(): the cached batch is an inference tensor, the live ones are not."""
    model = _scorer().eval()
    predict = compile(model)
    with torch.inference_mode():
        cached = torch.randn(4, 8) * 2.0
    scores = []
    with torch.no_grad():
        for _ in range(3):
            scores.append(predict(cached))
            live = torch.randn(4, 8)
            scores.append(predict(live))
    return scores


def scores_cached_and_live_fixed(compile):
    model = _scorer().eval()
    predict = compile(model)
    with torch.no_grad():  # the cache made as the live batches are
        cached = torch.randn(4, 8) * 2.0
    scores = []
    with torch.no_grad():
        for _ in range(3):
            scores.append(predict(cached))
            live = torch.randn(4, 8)
            scores.append(predict(live))
    return scores


def test_an_inference_tensor_cache_is_named_with_the_line_that_made_it() -> None:
    """Both calls under no_grad, one passing a tensor made under inference_mode: the fix names
    that tensor, the line that made it and the ``with`` around it (from the calling line in
    the compile's stack and the user's file)."""
    proof = prove("inference_tensor.alike", scores_cached_and_live, scores_cached_and_live_fixed)
    assert proof.shown
    assert proof.measures["compiles"] == (2, 1)
    advice = " ".join(proof.before.advice())
    made = next(i for i, line in enumerate(_SOURCE_LINES, 1) if "cached = torch.randn" in line)
    assert f"`cached` (from test_fixes_applied_state.py:{made}" in advice
    assert f"under `torch.inference_mode()` at line {made - 1}" in advice


# --- grad_mode_too.separate --------------------------------------------------------------------


class DropoutCNN(nn.Module):
    """A digit classifier with dropout (train/eval differ) before its head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.drop = nn.Dropout(0.0)
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        return self.fc(self.drop(F.relu(self.conv(x)).mean((2, 3))))


def classifier_train_and_evaluate(compile):
    """One compiled model for the training steps and for each epoch's evaluation, which runs
    under torch.inference_mode() on a batch made there."""
    model = DropoutCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    forward = compile(model)
    accuracy = []
    for _epoch in range(2):
        model.train()
        for _ in range(2):
            x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))
            loss = F.cross_entropy(forward(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.inference_mode():
            x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))
            accuracy.append((forward(x).argmax(-1) == y).float().mean())
    return accuracy, [p.detach().clone() for p in model.parameters()]


def classifier_train_and_evaluate_fixed(compile):
    model = DropoutCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_forward = compile(model)

    def eval_forward(x):
        return model(x)

    eval_forward = compile(eval_forward)
    accuracy = []
    for _epoch in range(2):
        model.train()
        for _ in range(2):
            x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))
            loss = F.cross_entropy(train_forward(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.inference_mode():
            x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))
            accuracy.append((eval_forward(x).argmax(-1) == y).float().mean())
    return accuracy, [p.detach().clone() for p in model.parameters()]


def test_a_separate_evaluation_function_never_recompiles_the_classifier() -> None:
    proof = prove(
        "grad_mode_too.separate",
        classifier_train_and_evaluate,
        classifier_train_and_evaluate_fixed,
    )
    assert proof.shown
    assert proof.measures["recompiles"] == (1, 0)
    assert proof.after.count("compiles") == proof.before.count("compiles") == 2


def anomaly_detector_train_and_score(compile):
    """An autoencoder anomaly detector: one compiled reconstruction error is the training loss
    and, in the scoring service (@torch.inference_mode()), the anomaly score of a window."""
    model = Denoiser()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def reconstruction_error(x):
        return (model(x) - x).pow(2).mean(-1)

    reconstruction_error = compile(reconstruction_error)

    @torch.inference_mode()
    def score(raw):
        window = (raw - raw.mean(0)) / (raw.std(0) + 1e-6)
        return reconstruction_error(window)

    scores = []
    for _ in range(3):
        loss = reconstruction_error(torch.randn(16, 12)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        scores.append(score(torch.randn(16, 12) * 3 + 1).clone())
    return scores, [p.detach().clone() for p in model.parameters()]


def anomaly_detector_train_and_score_fixed(compile):
    model = Denoiser()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def training_error(x):
        return (model(x) - x).pow(2).mean(-1)

    def scoring_error(x):
        return (model(x) - x).pow(2).mean(-1)

    training_error, scoring_error = compile(training_error), compile(scoring_error)

    @torch.inference_mode()
    def score(raw):
        window = (raw - raw.mean(0)) / (raw.std(0) + 1e-6)
        return scoring_error(window)

    scores = []
    for _ in range(3):
        loss = training_error(torch.randn(16, 12)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        scores.append(score(torch.randn(16, 12) * 3 + 1).clone())
    return scores, [p.detach().clone() for p in model.parameters()]


def test_a_separate_scoring_function_never_recompiles_the_reconstruction_error() -> None:
    proof = prove(
        "grad_mode_too.separate",
        anomaly_detector_train_and_score,
        anomaly_detector_train_and_score_fixed,
    )
    assert proof.shown
    assert proof.measures["recompiles"] == (1, 0)
    assert proof.after.count("compiles") == proof.before.count("compiles") == 2
