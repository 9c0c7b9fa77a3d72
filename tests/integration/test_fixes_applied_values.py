"""Fixes for tensor values read in Python and then stored, logged, returned, looped over or
branched on, applied to small programs: tests/fixproof.py.

Where a fix moves work out of the compiled function (the tensor is returned and ``.item()``,
the log line, the bookkeeping or the branch runs in the caller), the ``after`` program does that
work itself, so what it returns is what the ``before`` program returned.

module_by_value.disable keeps one break by design ("one break, nothing recompiled per routing"):
what it removes is the recompiles (its catalog kind).
"""

from __future__ import annotations

import logging
import math

import pytest

torch = pytest.importorskip("torch")

from fixproof import _compiled_run, prove  # noqa: E402

nn = torch.nn
F = torch.nn.functional

log = logging.getLogger("pt2doctor.test_fixes_applied_values")


def _batches(n, batch=8, features=6, classes=3):
    return [(torch.randn(batch, features), torch.randint(0, classes, (batch,))) for _ in range(n)]


# --- scalar_stored.return_tensor ----------------------------------------------------------------


def train_loop_appends_loss(compile):
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []

    def train_step(x, y):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        history.append(loss.item())
        accuracy = (logits.argmax(-1) == y).float().mean()
        return loss, accuracy

    train_step = compile(train_step)
    accuracies = []
    for x, y in _batches(3):
        loss, accuracy = train_step(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        accuracies.append(accuracy)
    return {"history": history, "accuracy": accuracies, "weights": list(model.parameters())}


def train_loop_appends_loss_outside(compile):
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []

    def train_step(x, y):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        accuracy = (logits.argmax(-1) == y).float().mean()
        return loss, accuracy

    train_step = compile(train_step)
    accuracies = []
    for x, y in _batches(3):
        loss, accuracy = train_step(x, y)
        history.append(loss.detach().item())
        loss.backward()
        opt.step()
        opt.zero_grad()
        accuracies.append(accuracy)
    return {"history": history, "accuracy": accuracies, "weights": list(model.parameters())}


class RangeObservedClassifier(nn.Module):
    """A classifier that records the largest logit it produced (a calibration observer)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 4))
        self.max_logit = 0.0

    def forward(self, x):
        logits = self.net(x)
        self.max_logit = logits.abs().max().item()
        return logits.softmax(-1)


class RangeReturnedClassifier(RangeObservedClassifier):
    def forward(self, x):
        logits = self.net(x)
        return logits.softmax(-1), logits.abs().max().detach()


def classifier_stores_logit_range(compile):
    model = RangeObservedClassifier().eval()
    run = compile(model)
    probs, ranges = [], []
    with torch.no_grad():
        for _ in range(4):
            probs.append(run(torch.randn(10, 5)))
            ranges.append(model.max_logit)
    return {"probs": probs, "ranges": ranges}


def classifier_stores_logit_range_outside(compile):
    model = RangeReturnedClassifier().eval()
    run = compile(model)
    probs, ranges = [], []
    with torch.no_grad():
        for _ in range(4):
            p, top = run(torch.randn(10, 5))
            model.max_logit = top.item()
            probs.append(p)
            ranges.append(model.max_logit)
    return {"probs": probs, "ranges": ranges}


def test_a_loss_appended_to_a_history_is_returned_and_read_outside() -> None:
    proof = prove("scalar_stored.return_tensor", train_loop_appends_loss,
                  train_loop_appends_loss_outside)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.count("compiles") == 1 < proof.before.count("compiles")  # len(history)


def test_a_logit_range_stored_on_the_model_is_returned_and_stored_outside() -> None:
    proof = prove("scalar_stored.return_tensor", classifier_stores_logit_range,
                  classifier_stores_logit_range_outside)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


# --- scalar_stored.capture_attr -----------------------------------------------------------------


class MonitoredLayer(nn.Module):
    """A layer that keeps its largest activation as a Python float, for a dashboard."""

    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(8, 16), nn.Linear(16, 8)
        self.peak = 0.0

    def forward(self, x):
        h = torch.relu(self.up(x))
        self.peak = float(h.abs().amax())
        return x + self.down(h)


def encoder_monitors_a_layer(compile):
    layers = nn.ModuleList([nn.Linear(8, 8), MonitoredLayer(), nn.Linear(8, 8)]).eval()

    def encode(x):
        for layer in layers:  # the break in a loop: Dynamo skips this frame
            x = layer(x)
        return x

    run = compile(encode)
    outputs, peaks = [], []
    with torch.no_grad():
        for _ in range(4):
            outputs.append(run(torch.randn(6, 8)))
            peaks.append(layers[1].peak)
    return {"outputs": outputs, "peaks": peaks}


def test_a_logit_range_stored_on_the_model_is_captured_with_capture_scalar_outputs() -> None:
    """The attribute set with the value (self.max_logit = ....item()): captured, one graph,
    and the model holds the same ranges after each call."""
    proof = prove("scalar_stored.capture_attr", classifier_stores_logit_range,
                  classifier_stores_logit_range, config={"capture_scalar_outputs": True})  # fmt: skip
    assert proof.after.count("graph_breaks") == 0 and proof.after.count("compiles") == 1


def test_a_layer_s_peak_stored_on_it_is_captured_and_the_encoder_compiles_whole() -> None:
    """A break in one layer of a loop over layers made Dynamo skip the loop's frame; with the
    value captured, the whole encoder is one graph, and the stored peaks are the same."""
    proof = prove("scalar_stored.capture_attr", encoder_monitors_a_layer,
                  encoder_monitors_a_layer, config={"capture_scalar_outputs": True})  # fmt: skip
    assert proof.before.count("graph_breaks") > 0
    assert proof.after.count("graph_breaks") == 0 and proof.after.count("compiles") == 1


# --- scalar_logged.is_compiling -----------------------------------------------------------------


def train_step_logs_debug(compile):
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 3))

    def train_step(x, y):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        log.debug("batch loss %.4f", loss.item())
        return loss + 1e-4 * sum(p.pow(2).sum() for p in model.parameters())

    train_step = compile(train_step)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in _batches(4):
        loss = train_step(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    return {"losses": losses, "weights": list(model.parameters())}


def train_step_logs_debug_guarded(compile):
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 3))

    def train_step(x, y):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        if not torch.compiler.is_compiling():
            log.debug("batch loss %.4f", loss.item())
        return loss + 1e-4 * sum(p.pow(2).sum() for p in model.parameters())

    train_step = compile(train_step)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in _batches(4):
        loss = train_step(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    return {"losses": losses, "weights": list(model.parameters())}


class ResidualEncoder(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.inp = nn.Linear(4, dim)
        self.block = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.ReLU())
        self.out = nn.Linear(dim, 2)

    def forward(self, x):
        h = self.inp(x)
        print("encoder: hidden norm", h.norm().item())
        h = h + self.block(h)
        return self.out(h)


class GuardedResidualEncoder(ResidualEncoder):
    def forward(self, x):
        h = self.inp(x)
        if not torch.compiler.is_compiling():
            print("encoder: hidden norm", h.norm().item())
        h = h + self.block(h)
        return self.out(h)


def encoder_prints_hidden_norm(compile):
    model = compile(ResidualEncoder().eval())
    with torch.no_grad():
        return [model(torch.randn(5, 4)) for _ in range(3)]


def encoder_prints_hidden_norm_guarded(compile):
    model = compile(GuardedResidualEncoder().eval())
    with torch.no_grad():
        return [model(torch.randn(5, 4)) for _ in range(3)]


def test_a_debug_log_of_the_loss_guarded_by_is_compiling_leaves_one_graph() -> None:
    proof = prove("scalar_logged.is_compiling", train_step_logs_debug,
                  train_step_logs_debug_guarded)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


def test_a_print_of_a_hidden_norm_guarded_by_is_compiling_leaves_one_graph() -> None:
    proof = prove("scalar_logged.is_compiling", encoder_prints_hidden_norm,
                  encoder_prints_hidden_norm_guarded)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


# --- scalar_logged.return_tensor ----------------------------------------------------------------


def validation_logs_loss(compile):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).eval()

    def validate(x, y):
        logits = model(x)
        log.info("val loss %.4f", F.cross_entropy(logits, y).item())
        return logits.argmax(-1)

    validate = compile(validate)
    with torch.no_grad():
        return [validate(x, y) for x, y in _batches(3)]


def validation_logs_loss_outside(compile):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).eval()

    def validate(x, y):
        logits = model(x)
        return logits.argmax(-1), F.cross_entropy(logits, y).detach()

    validate = compile(validate)
    predictions = []
    with torch.no_grad():
        for x, y in _batches(3):
            pred, loss = validate(x, y)
            log.info("val loss %.4f", loss.item())
            predictions.append(pred)
    return predictions


class TinyDecoder(nn.Module):
    def __init__(self, vocab=7, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.cell = nn.GRUCell(dim, dim)
        self.head = nn.Linear(dim, vocab)


def decoder_prints_entropy(compile):
    dec = TinyDecoder().eval()

    def decode_step(token, h):
        h = dec.cell(dec.embed(token), h)
        probs = dec.head(h).softmax(-1)
        print("step entropy", -(probs * probs.log()).sum(-1).mean().item())
        return probs.argmax(-1), h

    decode_step = compile(decode_step)
    token, h = torch.zeros(2, dtype=torch.long), torch.zeros(2, 8)
    tokens = []
    with torch.no_grad():
        for _ in range(4):
            token, h = decode_step(token, h)
            tokens.append(token)
    return tokens


def decoder_prints_entropy_outside(compile):
    dec = TinyDecoder().eval()

    def decode_step(token, h):
        h = dec.cell(dec.embed(token), h)
        probs = dec.head(h).softmax(-1)
        entropy = -(probs * probs.log()).sum(-1).mean()
        return probs.argmax(-1), h, entropy.detach()

    decode_step = compile(decode_step)
    token, h = torch.zeros(2, dtype=torch.long), torch.zeros(2, 8)
    tokens = []
    with torch.no_grad():
        for _ in range(4):
            token, h, entropy = decode_step(token, h)
            print("step entropy", entropy.item())
            tokens.append(token)
    return tokens


def test_a_logged_validation_loss_is_returned_and_logged_outside() -> None:
    proof = prove("scalar_logged.return_tensor", validation_logs_loss,
                  validation_logs_loss_outside)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


def test_a_printed_decoder_entropy_is_returned_and_printed_outside() -> None:
    proof = prove("scalar_logged.return_tensor", decoder_prints_entropy,
                  decoder_prints_entropy_outside)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


# --- mask_branch.always -------------------------------------------------------------------------

PAD = 0


class PaddedSelfAttention(nn.Module):
    def __init__(self, vocab=11, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, tokens):
        q, k, v = self.qkv(self.embed(tokens)).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if (tokens == PAD).any():  # noqa: SIM108
            pad_mask = tokens == PAD
        else:
            pad_mask = None
        if pad_mask is not None:
            scores = scores.masked_fill(pad_mask[:, None, :], float("-inf"))
        return scores.softmax(-1) @ v


class AlwaysMaskedSelfAttention(PaddedSelfAttention):
    def forward(self, tokens):
        q, k, v = self.qkv(self.embed(tokens)).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        pad_mask = tokens == PAD
        scores = scores.masked_fill(pad_mask[:, None, :], float("-inf"))
        return scores.softmax(-1) @ v


def _token_batches():
    full = torch.randint(1, 11, (3, 6))
    padded = full.clone()
    padded[0, 4:] = PAD
    padded[2, 2:] = PAD
    return [full, padded, torch.randint(1, 11, (3, 6)), padded.flip(0)]


def attention_masks_padding_if_any(compile):
    model = compile(PaddedSelfAttention().eval())
    with torch.no_grad():
        return [model(tokens) for tokens in _token_batches()]


def attention_masks_padding_always(compile):
    model = compile(AlwaysMaskedSelfAttention().eval())
    with torch.no_grad():
        return [model(tokens) for tokens in _token_batches()]


def _readings():
    clean = torch.randn(4, 5)
    gappy = torch.randn(4, 5)
    gappy[1, 3] = float("nan")
    gappy[3, 0] = float("nan")
    return [clean, gappy, torch.randn(4, 5)]


def standardize_fills_missing_if_any(compile):
    def standardize(x):
        missing = None
        if torch.isnan(x).any():
            missing = torch.isnan(x)
        if missing is not None:
            x = x.masked_fill(missing, 0.0)
        return (x - x.mean(0)) / (x.std(0) + 1e-5)

    standardize = compile(standardize)
    return [standardize(x) for x in _readings()]


def standardize_fills_missing_always(compile):
    def standardize(x):
        missing = torch.isnan(x)
        x = x.masked_fill(missing, 0.0)
        return (x - x.mean(0)) / (x.std(0) + 1e-5)

    standardize = compile(standardize)
    return [standardize(x) for x in _readings()]


def test_a_padding_mask_built_only_if_any_token_is_padding_is_built_always() -> None:
    proof = prove("mask_branch.always", attention_masks_padding_if_any,
                  attention_masks_padding_always)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


def test_a_missing_value_mask_built_only_if_any_is_missing_is_built_always() -> None:
    proof = prove("mask_branch.always", standardize_fills_missing_if_any,
                  standardize_fills_missing_always)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


# --- scalar_returned.tensor ---------------------------------------------------------------------


class ValueNet(nn.Module):
    """Scores a board position in [-1, 1] for a search that compares positions in Python."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(9, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, board):
        return self.body(board.flatten()).tanh()


def search_scores_positions(compile):
    net = ValueNet().eval()

    def score(board):
        value = net(board)
        return value.item()

    score = compile(score)
    boards = [torch.randint(-1, 2, (3, 3)).float() for _ in range(5)]
    with torch.no_grad():
        scores = [score(board) for board in boards]
    return {"scores": scores, "best": max(range(len(scores)), key=scores.__getitem__)}


def search_scores_positions_tensor(compile):
    net = ValueNet().eval()

    def score(board):
        value = net(board)
        return value.detach()

    score = compile(score)
    boards = [torch.randint(-1, 2, (3, 3)).float() for _ in range(5)]
    with torch.no_grad():
        scores = [score(board).item() for board in boards]
    return {"scores": scores, "best": max(range(len(scores)), key=scores.__getitem__)}


def eval_counts_correct(compile):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).eval()

    def count_correct(x, y):
        logits = model(x)
        return (logits.argmax(-1) == y).sum().item()

    count_correct = compile(count_correct)
    with torch.no_grad():
        correct = sum(count_correct(x, y) for x, y in _batches(4))
    return correct / 32


def eval_counts_correct_tensor(compile):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).eval()

    def count_correct(x, y):
        logits = model(x)
        return (logits.argmax(-1) == y).sum().detach()

    count_correct = compile(count_correct)
    with torch.no_grad():
        correct = sum(count_correct(x, y).item() for x, y in _batches(4))
    return correct / 32


def test_a_position_score_returned_as_a_number_is_returned_as_a_tensor() -> None:
    proof = prove("scalar_returned.tensor", search_scores_positions,
                  search_scores_positions_tensor)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


def test_a_correct_count_returned_as_a_number_is_returned_as_a_tensor() -> None:
    proof = prove("scalar_returned.tensor", eval_counts_correct,
                  eval_counts_correct_tensor)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


# --- returned_branch.condition ------------------------------------------------------------------

EOS = 3


class TinyLM(nn.Module):
    def __init__(self, vocab=6, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)
        with torch.no_grad():
            self.head.bias[EOS] += 1.0  # the model learned to stop

    def forward(self, tokens):
        h = self.embed(tokens).cumsum(1) / torch.arange(1, tokens.size(1) + 1)[:, None]
        return self.head(torch.tanh(self.mix(h)))


def greedy_decode_stops_when_all_finished(compile):
    lm = TinyLM().eval()

    def decode_step(tokens, finished):
        next_token = lm(tokens)[:, -1].argmax(-1)
        next_token = torch.where(finished, EOS, next_token)
        finished = finished | (next_token == EOS)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)
        if finished.all():
            return tokens, finished, True
        return tokens, finished, False

    decode_step = compile(decode_step)
    tokens, finished = torch.randint(0, 6, (4, 2)), torch.zeros(4, dtype=torch.bool)
    with torch.no_grad():
        for _ in range(12):
            tokens, finished, done = decode_step(tokens, finished)
            if done:
                break
    return tokens


def greedy_decode_stops_when_all_finished_in_caller(compile):
    lm = TinyLM().eval()

    def decode_step(tokens, finished):
        next_token = lm(tokens)[:, -1].argmax(-1)
        next_token = torch.where(finished, EOS, next_token)
        finished = finished | (next_token == EOS)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)
        return tokens, finished, finished.all()

    decode_step = compile(decode_step)
    tokens, finished = torch.randint(0, 6, (4, 2)), torch.zeros(4, dtype=torch.bool)
    with torch.no_grad():
        for _ in range(12):
            tokens, finished, done = decode_step(tokens, finished)
            if done:
                break
    return tokens


def _spd_matrix():
    a = torch.randn(6, 6)
    return a @ a.T + torch.diag(torch.arange(1.0, 7.0))


def power_iteration_stops_when_converged(compile):
    def iterate(a, v):
        w = a @ v
        w = w / w.norm()
        if (w - v).abs().max() < 1e-3:
            return w, True
        return w, False

    iterate = compile(iterate)
    a, v = _spd_matrix(), torch.ones(6) / math.sqrt(6)
    steps, converged = 0, False
    while not converged and steps < 200:
        v, converged = iterate(a, v)
        steps += 1
    return {"vector": v, "eigenvalue": v @ a @ v, "steps": steps}


def power_iteration_stops_when_converged_in_caller(compile):
    def iterate(a, v):
        w = a @ v
        w = w / w.norm()
        return w, (w - v).abs().max() < 1e-3

    iterate = compile(iterate)
    a, v = _spd_matrix(), torch.ones(6) / math.sqrt(6)
    steps, converged = 0, False
    while not converged and steps < 200:
        v, converged = iterate(a, v)
        steps += 1
    return {"vector": v, "eigenvalue": v @ a @ v, "steps": steps}


def test_a_decoder_step_returning_whether_all_finished_returns_the_condition() -> None:
    proof = prove("returned_branch.condition", greedy_decode_stops_when_all_finished,
                  greedy_decode_stops_when_all_finished_in_caller)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


def test_a_solver_step_returning_whether_it_converged_returns_the_condition() -> None:
    proof = prove("returned_branch.condition", power_iteration_stops_when_converged,
                  power_iteration_stops_when_converged_in_caller)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


# --- bookkeeping.after_call ---------------------------------------------------------------------


def eval_step_fills_confusion_matrix(compile):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).eval()
    confusion = [[0] * 3 for _ in range(3)]

    def eval_step(x, y):
        logits = model(x)
        preds = logits.argmax(-1)
        for t, p in zip(y.tolist(), preds.tolist(), strict=True):
            confusion[t][p] += 1
        return F.cross_entropy(logits, y)

    eval_step = compile(eval_step)
    with torch.no_grad():
        losses = [eval_step(x, y) for x, y in _batches(3)]
    return {"losses": losses, "confusion": confusion}


def eval_step_fills_confusion_matrix_after(compile):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).eval()
    confusion = [[0] * 3 for _ in range(3)]

    def eval_step(x, y):
        logits = model(x)
        return F.cross_entropy(logits, y), logits.argmax(-1)

    eval_step = compile(eval_step)
    losses = []
    with torch.no_grad():
        for x, y in _batches(3):
            loss, preds = eval_step(x, y)
            for t, p in zip(y.tolist(), preds.tolist(), strict=True):
                confusion[t][p] += 1
            losses.append(loss)
    return {"losses": losses, "confusion": confusion}


class BagOfWords(nn.Module):
    def __init__(self, vocab=20, dim=6):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.out = nn.Linear(dim, 2)


def text_classifier_counts_token_frequencies(compile):
    model = BagOfWords().eval()
    freq = {}

    def classify(ids):
        h = model.embed(ids)
        for tok in ids.flatten().tolist():
            freq[tok] = freq.get(tok, 0) + 1
        return model.out(h).log_softmax(-1)

    classify = compile(classify)
    with torch.no_grad():
        outs = [classify(torch.randint(0, 20, (4, 5))) for _ in range(3)]
    return {"outs": outs, "freq": dict(sorted(freq.items()))}


def text_classifier_counts_token_frequencies_after(compile):
    model = BagOfWords().eval()
    freq = {}

    def classify(ids):
        h = model.embed(ids)
        return model.out(h).log_softmax(-1)

    classify = compile(classify)
    outs = []
    with torch.no_grad():
        for _ in range(3):
            ids = torch.randint(0, 20, (4, 5))
            outs.append(classify(ids))
            for tok in ids.flatten().tolist():
                freq[tok] = freq.get(tok, 0) + 1
    return {"outs": outs, "freq": dict(sorted(freq.items()))}


def test_a_confusion_matrix_filled_inside_the_eval_step_is_filled_after_the_call() -> None:
    proof = prove("bookkeeping.after_call", eval_step_fills_confusion_matrix,
                  eval_step_fills_confusion_matrix_after)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


def test_token_frequencies_counted_inside_the_classifier_are_counted_after_the_call() -> None:
    proof = prove("bookkeeping.after_call", text_classifier_counts_token_frequencies,
                  text_classifier_counts_token_frequencies_after)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


# --- bookkeeping.in_tensors ---------------------------------------------------------------------


class Segmenter(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.conv = nn.Conv2d(3, classes, 3, padding=1)


def segmentation_eval_counts_per_class(compile):
    model = Segmenter().eval()
    total, correct = [0] * 4, [0] * 4

    def eval_step(image, target):
        pred = model.conv(image).argmax(1)
        for t, p in zip(target.flatten().tolist(), pred.flatten().tolist(), strict=True):
            total[t] += 1
            correct[t] += int(t == p)
        return pred

    eval_step = compile(eval_step)
    with torch.no_grad():
        preds = [eval_step(torch.randn(2, 3, 4, 4), torch.randint(0, 4, (2, 4, 4)))
                 for _ in range(3)]  # fmt: skip
    return {"preds": preds, "total": total, "correct": correct}


def segmentation_eval_counts_per_class_in_tensors(compile):
    model = Segmenter().eval()
    total = torch.zeros(4, dtype=torch.long)
    correct = torch.zeros(4, dtype=torch.long)

    def eval_step(image, target):
        pred = model.conv(image).argmax(1)
        t, p = target.flatten(), pred.flatten()
        total.index_add_(0, t, torch.ones_like(t))
        correct.index_add_(0, t, (t == p).long())
        return pred

    eval_step = compile(eval_step)
    with torch.no_grad():
        preds = [eval_step(torch.randn(2, 3, 4, 4), torch.randint(0, 4, (2, 4, 4)))
                 for _ in range(3)]  # fmt: skip
    return {"preds": preds, "total": total.tolist(), "correct": correct.tolist()}


def train_step_sums_loss_per_class(compile):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    class_loss = [0.0] * 3

    def loss_fn(x, y):
        losses = F.cross_entropy(model(x), y, reduction="none")
        for c, value in zip(y.tolist(), losses.tolist(), strict=True):
            class_loss[c] += value
        return losses.mean()

    loss_fn = compile(loss_fn)
    for x, y in _batches(3):
        loss_fn(x, y).backward()
        opt.step()
        opt.zero_grad()
    return {"class_loss": class_loss, "weights": list(model.parameters())}


def train_step_sums_loss_per_class_in_tensors(compile):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    class_loss = torch.zeros(3, dtype=torch.float64)

    def loss_fn(x, y):
        losses = F.cross_entropy(model(x), y, reduction="none")
        class_loss.index_add_(0, y, losses.detach().double())
        return losses.mean()

    loss_fn = compile(loss_fn)
    for x, y in _batches(3):
        loss_fn(x, y).backward()
        opt.step()
        opt.zero_grad()
    return {"class_loss": class_loss.tolist(), "weights": list(model.parameters())}


def test_per_class_pixel_counts_kept_in_python_lists_are_kept_in_tensors() -> None:
    proof = prove("bookkeeping.in_tensors", segmentation_eval_counts_per_class,
                  segmentation_eval_counts_per_class_in_tensors)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


def test_a_per_class_loss_sum_kept_in_a_python_list_is_kept_in_a_tensor() -> None:
    proof = prove("bookkeeping.in_tensors", train_step_sums_loss_per_class,
                  train_step_sums_loss_per_class_in_tensors)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0


# --- lengths_loop.mask --------------------------------------------------------------------------


class SentenceEncoder(nn.Module):
    def __init__(self, vocab=15, dim=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, tokens):
        return torch.tanh(self.proj(self.embed(tokens)))


def _padded(batch, steps=7, vocab=15):
    lengths = torch.randint(2, steps + 1, (batch,))
    return torch.randint(0, vocab, (batch, steps)), lengths


def sentence_embeddings_mean_pool_per_row(compile):
    encoder = SentenceEncoder().eval()

    def embed(tokens, lengths):
        h = encoder(tokens)
        pooled = torch.zeros(h.size(0), h.size(2))
        for i, n in enumerate(lengths.tolist()):
            pooled[i] = h[i, :n].mean(0)
        return F.normalize(pooled, dim=-1)

    embed = compile(embed)
    with torch.no_grad():
        return [embed(*_padded(batch)) for batch in (3, 4, 5)]


def sentence_embeddings_mean_pool_masked(compile):
    encoder = SentenceEncoder().eval()

    def embed(tokens, lengths):
        h = encoder(tokens)
        keep = torch.arange(h.shape[1], device=h.device)[None, :] < lengths[:, None]
        pooled = (h * keep[..., None]).sum(1) / lengths[:, None]
        return F.normalize(pooled, dim=-1)

    embed = compile(embed)
    with torch.no_grad():
        return [embed(*_padded(batch)) for batch in (3, 4, 5)]


def _candidates(batch, steps=7, vocab=15):
    """Candidate continuations of a prompt: tokens, and how many of each are real (>= 2)."""
    lengths = torch.randint(2, steps + 1, (batch,))
    return torch.randint(0, vocab, (batch, steps + 1)), lengths


def reranker_scores_candidates_per_row(compile):
    lm = TinyLM(vocab=15).eval()

    def sequence_logprob(tokens, lengths):
        logp = lm(tokens[:, :-1]).log_softmax(-1)
        token_logp = logp.gather(-1, tokens[:, 1:, None]).squeeze(-1)
        scores = []
        for b, n in enumerate(lengths.tolist()):
            scores.append(token_logp[b, :n].sum())
        return torch.stack(scores)

    sequence_logprob = compile(sequence_logprob)
    with torch.no_grad():
        return [sequence_logprob(*_candidates(batch)) for batch in (4, 2, 3)]


def reranker_scores_candidates_masked(compile):
    lm = TinyLM(vocab=15).eval()

    def sequence_logprob(tokens, lengths):
        logp = lm(tokens[:, :-1]).log_softmax(-1)
        token_logp = logp.gather(-1, tokens[:, 1:, None]).squeeze(-1)
        keep = torch.arange(token_logp.shape[1])[None, :] < lengths[:, None]
        return (token_logp * keep).sum(1)

    sequence_logprob = compile(sequence_logprob)
    with torch.no_grad():
        return [sequence_logprob(*_candidates(batch)) for batch in (4, 2, 3)]


def test_sentence_embeddings_pooled_row_by_row_over_lengths_are_pooled_by_a_mask() -> None:
    proof = prove("lengths_loop.mask", sentence_embeddings_mean_pool_per_row,
                  sentence_embeddings_mean_pool_masked)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.count("compiles") < proof.before.count("compiles")


def test_candidate_scores_summed_row_by_row_over_lengths_are_summed_by_a_mask() -> None:
    proof = prove("lengths_loop.mask", reranker_scores_candidates_per_row,
                  reranker_scores_candidates_masked)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.count("compiles") < proof.before.count("compiles")


# --- module_by_value.disable --------------------------------------------------------------------


class Top1MoE(nn.Module):
    def __init__(self, dim=6, experts=4):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))

    def forward(self, x):
        gates = self.router(x).softmax(-1)
        weight, expert_ids = gates.max(-1)
        out = torch.zeros_like(x)
        for i, e in enumerate(expert_ids.tolist()):
            out[i] = self.experts[e](x[i])
        return x + weight[:, None] * out


class Top1MoERoutedEagerly(Top1MoE):
    def forward(self, x):
        gates = self.router(x).softmax(-1)
        weight, expert_ids = gates.max(-1)
        out = self.route(x, expert_ids)
        return x + weight[:, None] * out

    @torch.compiler.disable
    def route(self, x, expert_ids):
        out = torch.zeros_like(x)
        for i, e in enumerate(expert_ids.tolist()):
            out[i] = self.experts[e](x[i])
        return out


def _moe_training(model_class, compile):
    model = model_class()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    step = compile(model)
    losses = []
    for _ in range(3):
        x = torch.randn(5, 6)
        loss = step(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    return {"losses": losses, "weights": list(model.parameters())}


def moe_layer_trains_routing_tokens(compile):
    return _moe_training(Top1MoE, compile)


def moe_layer_trains_routing_tokens_eagerly(compile):
    return _moe_training(Top1MoERoutedEagerly, compile)


class MultiTaskModel(nn.Module):
    def __init__(self, tasks=3):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
        self.heads = nn.ModuleList(nn.Linear(8, 2) for _ in range(tasks))

    def forward(self, x, task_ids):
        h = self.trunk(x)
        outs = []
        for i, t in enumerate(task_ids.tolist()):
            outs.append(self.heads[t](h[i]))
        return torch.stack(outs).log_softmax(-1)


class MultiTaskModelHeadsEagerly(MultiTaskModel):
    def forward(self, x, task_ids):
        h = self.trunk(x)
        return self.apply_heads(h, task_ids).log_softmax(-1)

    @torch.compiler.disable
    def apply_heads(self, h, task_ids):
        outs = []
        for i, t in enumerate(task_ids.tolist()):
            outs.append(self.heads[t](h[i]))
        return torch.stack(outs)


def _multitask_eval(model_class, compile):
    model = compile(model_class().eval())
    with torch.no_grad():
        return [model(torch.randn(4, 6), torch.randint(0, 3, (4,))) for _ in range(3)]


def multitask_model_picks_head_per_example(compile):
    return _multitask_eval(MultiTaskModel, compile)


def multitask_model_picks_head_per_example_eagerly(compile):
    return _multitask_eval(MultiTaskModelHeadsEagerly, compile)


def _one_break_no_recompiles(proof) -> None:
    """The routing loop in a disabled method: one break by design, nothing recompiled."""
    assert proof.after.count("graph_breaks") == proof.before.count("graph_breaks") == 1
    assert proof.after.count("recompiles") == 0 < proof.before.count("recompiles")


def test_an_moe_routing_loop_moved_into_a_disabled_method_compiles_once() -> None:
    proof = prove(
        "module_by_value.disable",
        moe_layer_trains_routing_tokens,
        moe_layer_trains_routing_tokens_eagerly,
    )
    _one_break_no_recompiles(proof)


def test_a_multitask_head_loop_moved_into_a_disabled_method_compiles_once() -> None:
    proof = prove(
        "module_by_value.disable",
        multitask_model_picks_head_per_example,
        multitask_model_picks_head_per_example_eagerly,
    )
    _one_break_no_recompiles(proof)


# --- module_by_value.mask_loop ------------------------------------------------------------------


class SparseFFN(nn.Module):
    """A transformer block's feed-forward as a top-1 mixture of experts, at inference."""

    def __init__(self, dim=6, experts=3):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, 12), nn.GELU(), nn.Linear(12, dim)) for _ in range(experts)
        )

    def forward(self, tokens):
        x = self.norm(tokens)
        chosen = self.gate(x).argmax(-1)
        out = torch.empty_like(x)
        for i, j in enumerate(chosen.tolist()):
            out[i] = self.experts[j](x[i])
        return tokens + out


class SparseFFNMasked(SparseFFN):
    def forward(self, tokens):
        x = self.norm(tokens)
        chosen = self.gate(x).argmax(-1)
        out = torch.zeros_like(x)
        for j, expert in enumerate(self.experts):
            out = out + (chosen == j)[:, None] * expert(x)
        return tokens + out


def _ffn_inference(model_class, compile):
    model = compile(model_class().eval())
    with torch.no_grad():
        return [model(torch.randn(5, 6)) for _ in range(3)]


def sparse_ffn_routes_tokens_to_experts(compile):
    return _ffn_inference(SparseFFN, compile)


def sparse_ffn_runs_every_expert_masked(compile):
    return _ffn_inference(SparseFFNMasked, compile)


class SpeakerAdapters(nn.Module):
    """A speech model's frames, each utterance adapted by its speaker's residual adapter."""

    def __init__(self, speakers=3, dim=4):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.adapters = nn.ModuleList(nn.Linear(dim, dim) for _ in range(speakers))

    def forward(self, frames, speaker):
        h = torch.relu(self.encoder(frames))
        adapted = []
        for b, s in enumerate(speaker.tolist()):
            adapted.append(h[b] + self.adapters[s](h[b]))
        return torch.stack(adapted)


class SpeakerAdaptersMasked(SpeakerAdapters):
    def forward(self, frames, speaker):
        h = torch.relu(self.encoder(frames))
        out = h
        for s, adapter in enumerate(self.adapters):
            out = out + (speaker == s)[:, None, None] * adapter(h)
        return out


def _speaker_inference(model_class, compile):
    model = compile(model_class().eval())
    with torch.no_grad():
        return [model(torch.randn(3, 5, 4), torch.randint(0, 3, (3,))) for _ in range(4)]


def speech_model_adapts_each_utterance_to_its_speaker(compile):
    return _speaker_inference(SpeakerAdapters, compile)


def speech_model_adapts_every_utterance_masked(compile):
    return _speaker_inference(SpeakerAdaptersMasked, compile)


def test_experts_picked_per_token_are_all_run_under_a_routing_mask() -> None:
    proof = prove("module_by_value.mask_loop", sparse_ffn_routes_tokens_to_experts,
                  sparse_ffn_runs_every_expert_masked)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.count("compiles") == 1 < proof.before.count("compiles")


def test_speaker_adapters_picked_per_utterance_are_all_run_under_a_speaker_mask() -> None:
    proof = prove("module_by_value.mask_loop", speech_model_adapts_each_utterance_to_its_speaker,
                  speech_model_adapts_every_utterance_masked)  # fmt: skip
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.count("compiles") == 1 < proof.before.count("compiles")


# --- what pt2doctor gets wrong on these programs (tool bugs, documented) -----------------------


def _advice_at(program, code):
    """The advice of the break row whose code is ``code`` in ``program`` compiled."""
    run = _compiled_run(program, "eager", None, {})
    (row,) = [row for row in run.report["graph_breaks"] if row["site"].get("code") == code]
    return row["advice"]


def test_the_mask_branch_paragraph_quotes_a_mask_that_ends_in_a_call_whole() -> None:
    """``if torch.isnan(x).any():`` builds ``missing = torch.isnan(x)``; the paragraph tells to
    build `missing = torch.isnan(x` (``.strip("() ")`` in advice._mask_branch)."""
    advice = _advice_at(standardize_fills_missing_if_any, "if torch.isnan(x).any():")
    assert "`missing = torch.isnan(x)`" in advice


def reranker_scores_shifted_candidates_per_row(compile):
    lm = TinyLM(vocab=15).eval()

    def sequence_logprob(tokens, lengths):
        logp = lm(tokens[:, :-1]).log_softmax(-1)
        token_logp = logp.gather(-1, tokens[:, 1:, None]).squeeze(-1)
        scores = []
        for b, n in enumerate(lengths.tolist()):
            scores.append(token_logp[b, : n - 1].sum())
        return torch.stack(scores)

    sequence_logprob = compile(sequence_logprob)
    with torch.no_grad():
        return [sequence_logprob(*_padded(batch)) for batch in (4, 2, 3)]


def test_lengths_that_cut_rows_with_an_offset_get_the_mask_not_bookkeeping() -> None:
    """``token_logp[b, : n - 1]`` (n tokens, n - 1 predicted: the usual shift of a language
    model's targets) cuts each row by its length as ``[b, :n]`` does, but gets the bookkeeping
    paragraph ("kept in Python ... return the tensors and do the bookkeeping after the call")
    instead of the mask."""
    advice = _advice_at(reranker_scores_shifted_candidates_per_row,
                        "for b, n in enumerate(lengths.tolist()):")  # fmt: skip
    assert "mask the positions past each length" in advice


# --- a list whose length is guarded: what the code does with it decides the fix --------------
# Not catalogued (the paragraph is built from the code it reads), applied here the same way:
# the report must give the fix, and the program with it applied compiles less and computes the
# same numbers.


def _temperature_schedule(compile, fixed: bool):
    """A training step handed the list of temperatures the loop lowers every third step; the
    compiled code reads only the last one (second outside review, p5_mixed)."""
    net = torch.nn.Linear(8, 4)

    def step(x, temps):
        logits = net(x) / (temps if fixed else temps[-1])
        return logits.logsumexp(-1).mean()

    step = compile(step)
    temps, losses = [1.0], []
    for i in range(9):
        if i % 3 == 0:
            temps.append(temps[-1] * 0.9)
        losses.append(step(torch.randn(4, 8), torch.tensor(temps[-1]) if fixed else temps))
    return losses


def _running_means(compile, fixed: bool):
    """A step handed the whole list of past losses, which the loop grows, to scale by their
    mean: the compiled code reads all of it (sum and len)."""
    net = torch.nn.Linear(8, 1)

    def step(x, history):
        mean = history.mean() if fixed else sum(history) / len(history)
        return (net(x).squeeze(-1) / mean).mean()

    step = compile(step)
    history, out = [1.0], []
    for _ in range(6):
        loss = step(torch.randn(4, 8), torch.tensor(history) if fixed else history)
        history.append(1.0 + float(loss.detach().abs()))
        out.append(loss)
    return out


@pytest.mark.parametrize(
    ("program", "said"),
    [
        (_temperature_schedule, "pass that item instead of the list (`torch.tensor(temps[-1])`"),
        (_running_means, "grows it outside the compiled function and passes it in whole"),
    ],
)
def test_a_growing_list_gets_the_fix_for_what_the_compiled_code_reads(program, said) -> None:
    before = _compiled_run(lambda compile: program(compile, False), "eager", None, {})
    advice = " ".join(f["advice"] for f in before.report["findings"] if f["code"] == "recompiles")
    assert said in advice, advice
    assert "append them outside" not in advice  # the list is grown outside already
    after = _compiled_run(lambda compile: program(compile, True), "eager", None, {})
    assert after.report["summary"]["compiles"] < before.report["summary"]["compiles"]
    torch.manual_seed(0)
    eager = program(lambda fn, **_: fn, False)
    torch.testing.assert_close(after.outputs, eager)
