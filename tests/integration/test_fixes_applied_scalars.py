"""Fixes for a tensor value read in Python (.item(), .tolist(), float(), int(), a branch on a
value, a boolean mask, an empty check), applied: tests/fixproof.py.

Each fix id is applied to two programs written the way users write them (a training step, a
model's forward, a data-processing function, a decoder step): ``before`` as written, ``after``
with the fix pt2doctor names applied; ``prove`` checks that pt2doctor names it on ``before``,
that it removes the break, and that the results stay those of ``before`` run eagerly.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from fixproof import prove  # noqa: E402

# Dynamo config for the programs whose selection (a boolean mask, nonzero) is traced with an
# unbacked size: only then does an empty check on it reach Dynamo as a branch on a value.
DYNAMIC_SELECTION = {"capture_dynamic_output_shape_ops": True}


def said(run) -> str:
    """Every advice paragraph of a run's report, together."""
    return " ".join(run.advice())


def break_categories(run) -> list[str]:
    return [row["category"] for row in run.report["graph_breaks"]]


# --- scalar.capture_scalar_outputs: a value read by .item() that only feeds tensor ops ---------


def scale_by_max(compile):
    def step(x):
        return x * x.abs().max().item()

    step = compile(step)
    return [step(torch.randn(4, 3)) for _ in range(3)]


def scale_by_max_kept(compile):
    return scale_by_max(compile)


def test_capture_scalar_outputs_keeps_a_scale_in_the_graph() -> None:
    proof = prove(
        "scalar.capture_scalar_outputs",
        scale_by_max,
        scale_by_max_kept,
        config={"capture_scalar_outputs": True},
    )
    assert proof.after.count("graph_breaks") == 0


class TemperatureScaled(torch.nn.Module):
    """A classifier calibrated by temperature scaling; the temperature is read as a number so
    that no gradient flows into it from the classifier's loss."""

    def __init__(self) -> None:
        super().__init__()
        self.head = torch.nn.Linear(6, 4)
        self.temperature = torch.nn.Parameter(torch.tensor(1.5))

    def forward(self, x):
        logits = self.head(x)
        return torch.softmax(logits / self.temperature.item(), dim=-1)


def calibrated_probabilities(compile):
    model = TemperatureScaled().eval()
    forward = compile(model)
    with torch.no_grad():
        return [forward(torch.randn(5, 6)) for _ in range(3)]


def calibrated_probabilities_kept(compile):
    return calibrated_probabilities(compile)


def test_capture_scalar_outputs_keeps_a_temperature_in_a_forward() -> None:
    proof = prove(
        "scalar.capture_scalar_outputs",
        calibrated_probabilities,
        calibrated_probabilities_kept,
        config={"capture_scalar_outputs": True},
    )
    assert proof.before.count("graph_breaks") == 1
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


# --- value_branch.where / value_branch.cond: a Python branch on a tensor's value ----------------


def _waveforms():
    """Clips of audio, some louder than full scale (peaks above 1.0), some not."""
    return [torch.randn(2, 16) * gain for gain in (3.0, 0.2, 2.0, 0.1)]


def peak_normalize(compile):
    def normalize(wav):
        peak = wav.abs().max()
        if peak > 1.0:
            wav = wav / peak
        return wav - wav.mean(dim=-1, keepdim=True)

    normalize = compile(normalize)
    return [normalize(wav) for wav in _waveforms()]


def peak_normalize_where(compile):
    def normalize(wav):
        peak = wav.abs().max()
        wav = torch.where(peak > 1.0, wav / peak, wav)
        return wav - wav.mean(dim=-1, keepdim=True)

    normalize = compile(normalize)
    return [normalize(wav) for wav in _waveforms()]


def test_where_replaces_a_branch_on_an_audio_peak() -> None:
    proof = prove("value_branch.where", peak_normalize, peak_normalize_where)
    assert "capture_scalar_outputs does not help" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


def _warmup_run(step_fn):
    """Six steps of a hand-written SGD whose step counter is a tensor (kept in the optimizer's
    state, as torch.optim does), across the end of the warmup."""
    param = torch.randn(4)
    step = torch.tensor(0)
    for _ in range(6):
        param = step_fn(param, torch.randn(4), step)
        step = step + 1
    return param


def warmup_sgd(compile):
    def sgd_step(param, grad, step):
        lr = 0.1 * (step + 1) / 3 if step < 3 else 0.1
        return param - lr * grad

    return _warmup_run(compile(sgd_step))


def warmup_sgd_where(compile):
    def sgd_step(param, grad, step):
        lr = torch.where(step < 3, 0.1 * (step + 1) / 3, 0.1)
        return param - lr * grad

    return _warmup_run(compile(sgd_step))


def test_where_replaces_a_branch_on_a_warmup_step_counter() -> None:
    proof = prove("value_branch.where", warmup_sgd, warmup_sgd_where)
    assert "capture_scalar_outputs does not help" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


class EarlyExit(torch.nn.Module):
    """A residual block that skips its expensive branch for inputs that are already small."""

    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(
            torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8)
        )

    def forward(self, x):
        out = x
        if x.abs().mean() >= 0.5:
            out = x + self.block(x)
        return torch.nn.functional.layer_norm(out, (8,))


class EarlyExitCond(EarlyExit):
    def forward(self, x):
        # The skip side returns a copy: a torch.cond branch may not return its input itself.
        out = torch.cond(
            x.abs().mean() >= 0.5, lambda t: t + self.block(t), lambda t: t.clone(), (x,)
        )
        return torch.nn.functional.layer_norm(out, (8,))


def _early_exit_outputs(compile, model):
    forward = compile(model.eval())
    with torch.no_grad():
        return [forward(torch.randn(3, 8) * scale) for scale in (2.0, 0.1, 1.0, 0.05)]


def early_exit_block(compile):
    return _early_exit_outputs(compile, EarlyExit())


def early_exit_block_cond(compile):
    return _early_exit_outputs(compile, EarlyExitCond())


def test_cond_replaces_a_branch_that_skips_a_block() -> None:
    proof = prove("value_branch.cond", early_exit_block, early_exit_block_cond)
    assert "capture_scalar_outputs does not help" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


def _images():
    """Batches as a loader hands them over: some in bytes' range (0-255), some already in 0-1."""
    return [torch.rand(2, 3, 4, 4) * top for top in (255.0, 1.0, 255.0)]


def images_to_unit_range(compile):
    def preprocess(images, mean, std):
        if images.max() > 1:
            images = images / 255.0
        return (images - mean) / std

    preprocess = compile(preprocess)
    mean, std = torch.rand(3, 1, 1), torch.rand(3, 1, 1) + 0.5
    return [preprocess(images, mean, std) for images in _images()]


def images_to_unit_range_cond(compile):
    def preprocess(images, mean, std):
        images = torch.cond(images.max() > 1, lambda t: t / 255.0, lambda t: t.clone(), (images,))
        return (images - mean) / std

    preprocess = compile(preprocess)
    mean, std = torch.rand(3, 1, 1), torch.rand(3, 1, 1) + 0.5
    return [preprocess(images, mean, std) for images in _images()]


def test_cond_replaces_a_branch_on_an_image_batchs_range() -> None:
    proof = prove("value_branch.cond", images_to_unit_range, images_to_unit_range_cond)
    assert "capture_scalar_outputs does not help" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


# --- shape.where_mask / shape.capture_dynamic_output_shape_ops: a boolean mask's selection ------


def positive_label_loss(compile):
    def loss_fn(logits, labels):
        losses = F.binary_cross_entropy_with_logits(logits, labels, reduction="none")
        return losses[labels > 0].sum()

    loss_fn = compile(loss_fn)
    return [loss_fn(torch.randn(10), (torch.rand(10) > 0.5).float()) for _ in range(3)]


def positive_label_loss_where(compile):
    def loss_fn(logits, labels):
        losses = F.binary_cross_entropy_with_logits(logits, labels, reduction="none")
        return torch.where(labels > 0, losses, 0).sum()

    loss_fn = compile(loss_fn)
    return [loss_fn(torch.randn(10), (torch.rand(10) > 0.5).float()) for _ in range(3)]


def test_where_mask_keeps_a_masked_loss_static() -> None:
    proof = prove("shape.where_mask", positive_label_loss, positive_label_loss_where)
    assert break_categories(proof.before) == ["data_dependent_shape"]
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


def _sensor_readings():
    """Readings with gaps (NaN where a sensor dropped out)."""
    readings = []
    for _ in range(3):
        x = torch.randn(4, 6)
        x[torch.rand(4, 6) < 0.3] = float("nan")
        readings.append(x)
    return readings


def nan_mean(compile):
    def summarize(x):
        valid = x[~torch.isnan(x)]
        return valid.sum() / valid.numel()

    summarize = compile(summarize)
    return [summarize(x) for x in _sensor_readings()]


def nan_mean_where(compile):
    def summarize(x):
        ok = ~torch.isnan(x)
        return torch.where(ok, x, 0).sum() / ok.sum()

    summarize = compile(summarize)
    return [summarize(x) for x in _sensor_readings()]


def test_where_mask_keeps_a_mean_over_valid_readings_static() -> None:
    proof = prove("shape.where_mask", nan_mean, nan_mean_where)
    assert break_categories(proof.before) == ["data_dependent_shape"]
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


class MaskedLMHead(torch.nn.Module):
    """A masked-LM loss computed only at the masked positions (labels != -100), as BERT-style
    training code does to skip the vocabulary projection elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.decoder = torch.nn.Linear(8, 11)

    def forward(self, hidden, labels):
        picked = labels != -100
        logits = self.decoder(hidden[picked])
        return F.cross_entropy(logits, labels[picked])


def _mlm_batches():
    batches = []
    for _ in range(3):
        labels = torch.randint(0, 11, (2, 6))
        labels[torch.rand(2, 6) < 0.6] = -100
        labels[0, 0] = 3  # at least one masked position per batch
        batches.append((torch.randn(2, 6, 8), labels))
    return batches


def masked_lm_loss(compile):
    head = compile(MaskedLMHead())
    return [head(hidden, labels) for hidden, labels in _mlm_batches()]


def masked_lm_loss_kept(compile):
    return masked_lm_loss(compile)


def test_capture_dynamic_output_shape_ops_traces_a_masked_lm_loss() -> None:
    proof = prove(
        "shape.capture_dynamic_output_shape_ops",
        masked_lm_loss,
        masked_lm_loss_kept,
        config=DYNAMIC_SELECTION,
    )
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


def _detections():
    return [(torch.rand(10, 4) * 20, torch.rand(10)) for _ in range(3)]


def kept_box_area(compile):
    def postprocess(boxes, scores):
        keep = torch.nonzero(scores > 0.3).squeeze(1)
        kept = boxes[keep]
        widths = (kept[:, 2] - kept[:, 0]).abs()
        heights = (kept[:, 3] - kept[:, 1]).abs()
        return (widths * heights).sum(), scores[keep].mean()

    postprocess = compile(postprocess)
    return [postprocess(boxes, scores) for boxes, scores in _detections()]


def kept_box_area_kept(compile):
    return kept_box_area(compile)


def test_capture_dynamic_output_shape_ops_traces_a_detection_postprocess() -> None:
    proof = prove(
        "shape.capture_dynamic_output_shape_ops",
        kept_box_area,
        kept_box_area_kept,
        config=DYNAMIC_SELECTION,
    )
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


# --- scalar_cast.keep_tensor: float() of a tensor ---------------------------------------------


def standardize_features(compile):
    def standardize(h):
        std = float(h.std())
        return (h - h.mean()) / (std + 1e-5)

    standardize = compile(standardize)
    return [standardize(torch.randn(4, 5)) for _ in range(3)]


def standardize_features_tensor(compile):
    def standardize(h):
        std = h.std()
        return (h - h.mean()) / (std + 1e-5)

    standardize = compile(standardize)
    return [standardize(torch.randn(4, 5)) for _ in range(3)]


def test_keeping_a_std_a_tensor_removes_the_float_break() -> None:
    proof = prove("scalar_cast.keep_tensor", standardize_features, standardize_features_tensor)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


class ContrastiveHead(torch.nn.Module):
    """CLIP's contrastive loss: a learned logit scale, stored as its log."""

    def __init__(self) -> None:
        super().__init__()
        self.logit_scale = torch.nn.Parameter(torch.tensor(2.0))

    def forward(self, image, text):
        scale = float(self.logit_scale.exp())
        return self.symmetric_loss(scale, image, text)

    def symmetric_loss(self, scale, image, text):
        logits = scale * F.normalize(image, dim=-1) @ F.normalize(text, dim=-1).T
        targets = torch.arange(image.size(0))
        return (F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets)) / 2


class ContrastiveHeadTensor(ContrastiveHead):
    def forward(self, image, text):
        scale = self.logit_scale.exp()
        return self.symmetric_loss(scale, image, text)


def _contrastive_losses(compile, head):
    forward = compile(head)
    with torch.no_grad():
        return [forward(torch.randn(4, 8), torch.randn(4, 8)) for _ in range(3)]


def clip_loss(compile):
    return _contrastive_losses(compile, ContrastiveHead())


def clip_loss_tensor(compile):
    return _contrastive_losses(compile, ContrastiveHeadTensor())


def test_keeping_a_logit_scale_a_tensor_removes_the_float_break() -> None:
    proof = prove("scalar_cast.keep_tensor", clip_loss, clip_loss_tensor)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


# --- scalar_item.keep_tensor: name = <tensor expression>.item() -------------------------------


def fake_quantize(compile):
    def quantize(w):
        scale = w.abs().max().item() / 127
        scale = max(scale, 1e-8)
        return torch.round(w / scale).clamp(-127, 127) * scale

    quantize = compile(quantize)
    return [quantize(torch.randn(6, 6)) for _ in range(3)]


def fake_quantize_tensor(compile):
    def quantize(w):
        scale = w.abs().max() / 127
        scale = scale.clamp(min=1e-8)
        return torch.round(w / scale).clamp(-127, 127) * scale

    quantize = compile(quantize)
    return [quantize(torch.randn(6, 6)) for _ in range(3)]


def test_keeping_a_quantization_scale_a_tensor_removes_the_item_break() -> None:
    proof = prove("scalar_item.keep_tensor", fake_quantize, fake_quantize_tensor)
    said = " ".join(proof.before.advice())
    assert "`max(scale, 1e-8)` becomes `scale.clamp(min=1e-8)`" in said
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


def _clipped_steps(step_fn):
    """SGD steps with gradient-norm clipping: two gradients above the max norm, one below."""
    param = torch.randn(8)
    for gain in (5.0, 0.01, 3.0):
        param = step_fn(param, torch.randn(8) * gain)
    return param


def clip_by_norm(compile):
    def sgd_step(param, grad, max_norm=1.0, lr=0.1):
        clip_coef = max_norm / (grad.norm().item() + 1e-6)
        clip_coef = min(clip_coef, 1.0)
        return param - lr * grad * clip_coef

    return _clipped_steps(compile(sgd_step))


def clip_by_norm_tensor(compile):
    def sgd_step(param, grad, max_norm=1.0, lr=0.1):
        clip_coef = max_norm / (grad.norm() + 1e-6)
        clip_coef = clip_coef.clamp(max=1.0)
        return param - lr * grad * clip_coef

    return _clipped_steps(compile(sgd_step))


def test_keeping_a_clip_coefficient_a_tensor_removes_the_item_break() -> None:
    proof = prove("scalar_item.keep_tensor", clip_by_norm, clip_by_norm_tensor)
    said = " ".join(proof.before.advice())
    assert "`min(clip_coef, 1.0)` becomes `clip_coef.clamp(max=1.0)`" in said
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


# --- scalar_size.from_shape / scalar_size.mask: a count read with int() or .item() --------------


def _graphs():
    """Node features and directed edges of small graphs (5 nodes)."""
    return [(torch.randn(5, 3), torch.randint(0, 5, (2, 7))) for _ in range(3)]


def gcn_mean_aggregate(compile):
    def propagate(x, edge_index):
        loops = torch.arange(x.size(0)).repeat(2, 1)
        edge_index = torch.cat([edge_index, loops], dim=1)
        num_nodes = int(edge_index.max()) + 1
        src, dst = edge_index
        deg = torch.zeros(num_nodes).index_add_(0, dst, torch.ones(dst.numel()))
        out = torch.zeros(num_nodes, x.size(1)).index_add_(0, dst, x[src])
        return out / deg[:, None]

    propagate = compile(propagate)
    return [propagate(x, edges) for x, edges in _graphs()]


def gcn_mean_aggregate_from_shape(compile):
    def propagate(x, edge_index):
        loops = torch.arange(x.size(0)).repeat(2, 1)
        edge_index = torch.cat([edge_index, loops], dim=1)
        num_nodes = x.size(0)
        src, dst = edge_index
        deg = torch.zeros(num_nodes).index_add_(0, dst, torch.ones(dst.numel()))
        out = torch.zeros(num_nodes, x.size(1)).index_add_(0, dst, x[src])
        return out / deg[:, None]

    propagate = compile(propagate)
    return [propagate(x, edges) for x, edges in _graphs()]


def test_a_node_count_from_the_features_shape_removes_the_break() -> None:
    proof = prove("scalar_size.from_shape", gcn_mean_aggregate, gcn_mean_aggregate_from_shape)
    assert "a count or a size (`num_nodes`)" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


def _classification_batches():
    """Batches in which every class occurs (the labels are a shuffled cycle of the classes)."""
    return [(torch.randn(8, 4), torch.randperm(8) % 4) for _ in range(3)]


def label_smoothing_loss(compile):
    def loss_fn(logits, labels, smoothing=0.1):
        num_classes = int(labels.max()) + 1
        target = F.one_hot(labels, num_classes).float()
        target = target * (1 - smoothing) + smoothing / num_classes
        return -(target * logits.log_softmax(-1)).sum(-1).mean()

    loss_fn = compile(loss_fn)
    return [loss_fn(logits, labels) for logits, labels in _classification_batches()]


def label_smoothing_loss_from_shape(compile):
    def loss_fn(logits, labels, smoothing=0.1):
        num_classes = logits.size(1)
        target = F.one_hot(labels, num_classes).float()
        target = target * (1 - smoothing) + smoothing / num_classes
        return -(target * logits.log_softmax(-1)).sum(-1).mean()

    loss_fn = compile(loss_fn)
    return [loss_fn(logits, labels) for logits, labels in _classification_batches()]


def test_a_class_count_from_the_logits_shape_removes_the_break() -> None:
    proof = prove("scalar_size.from_shape", label_smoothing_loss, label_smoothing_loss_from_shape)
    assert "a count or a size (`num_classes`)" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


def running_mean_of_filled(compile):
    def recent_mean(buffer, filled):
        count = int(filled)
        return buffer[:count].mean(0)

    recent_mean = compile(recent_mean)
    buffer = torch.randn(8, 3)
    return [recent_mean(buffer, torch.tensor(n)) for n in (3, 5, 8, 2)]


def running_mean_of_filled_mask(compile):
    def recent_mean(buffer, filled):
        keep = torch.arange(buffer.size(0)) < filled
        return torch.where(keep[:, None], buffer, 0).sum(0) / keep.sum()

    recent_mean = compile(recent_mean)
    buffer = torch.randn(8, 3)
    return [recent_mean(buffer, torch.tensor(n)) for n in (3, 5, 8, 2)]


def test_masking_past_a_fill_count_removes_the_break_and_the_recompiles() -> None:
    proof = prove("scalar_size.mask", running_mean_of_filled, running_mean_of_filled_mask)
    assert "a slice `[:count]`" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1
    assert proof.after.count("compiles") < proof.before.count("compiles")


class CachedAttention(torch.nn.Module):
    """One decoder step of single-head attention over a preallocated KV cache. The step writes
    with index_copy_: `self.k_cache[pos] = k` with a 0-d tensor `pos` is guarded on pos's value
    (`pos.item() == 0`) and would compile again at every position, fix or no fix."""

    def __init__(self, max_len: int = 8, dim: int = 4) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.register_buffer("k_cache", torch.zeros(max_len, dim))
        self.register_buffer("v_cache", torch.zeros(max_len, dim))

    def forward(self, x, pos):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        self.k_cache.index_copy_(0, pos.view(1), k[None])
        self.v_cache.index_copy_(0, pos.view(1), v[None])
        cache_len = int(pos) + 1
        keys, values = self.k_cache[:cache_len], self.v_cache[:cache_len]
        weights = torch.softmax(keys @ q / keys.size(-1) ** 0.5, dim=0)
        return weights @ values


class CachedAttentionMasked(CachedAttention):
    def forward(self, x, pos):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        self.k_cache.index_copy_(0, pos.view(1), k[None])
        self.v_cache.index_copy_(0, pos.view(1), v[None])
        keep = torch.arange(self.k_cache.size(0)) <= pos
        scores = (self.k_cache @ q / self.k_cache.size(-1) ** 0.5).masked_fill(~keep, float("-inf"))
        return torch.softmax(scores, dim=0) @ self.v_cache


def _decode(compile, model):
    step = compile(model)
    with torch.no_grad():
        return [step(torch.randn(4), torch.tensor(pos)) for pos in range(4)]


def kv_cache_decode(compile):
    return _decode(compile, CachedAttention())


def kv_cache_decode_mask(compile):
    return _decode(compile, CachedAttentionMasked())


def test_masking_past_the_cache_length_removes_the_break() -> None:
    proof = prove("scalar_size.mask", kv_cache_decode, kv_cache_decode_mask)
    assert "a slice `[:cache_len]`" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


# --- empty_check.drop / empty_check.torch_check: `if sel.numel() == 0` on a selection ----------


def positive_pair_loss(compile):
    def loss_fn(losses, labels):
        pos = losses[labels == 1]
        if pos.numel() == 0:
            return losses.sum() * 0
        return pos.sum()

    loss_fn = compile(loss_fn)
    labels = [torch.tensor([0, 1, 1, 0, 1, 0]), torch.zeros(6, dtype=torch.long)]
    return [loss_fn(torch.rand(6), y) for y in [*labels, torch.tensor([1, 0, 0, 0, 0, 1])]]


def positive_pair_loss_unchecked(compile):
    def loss_fn(losses, labels):
        pos = losses[labels == 1]
        return pos.sum()

    loss_fn = compile(loss_fn)
    labels = [torch.tensor([0, 1, 1, 0, 1, 0]), torch.zeros(6, dtype=torch.long)]
    return [loss_fn(torch.rand(6), y) for y in [*labels, torch.tensor([1, 0, 0, 0, 0, 1])]]


def test_dropping_an_empty_check_before_a_sum_removes_the_break() -> None:
    proof = prove(
        "empty_check.drop",
        positive_pair_loss,
        positive_pair_loss_unchecked,
        before_config=DYNAMIC_SELECTION,
    )
    assert "`if pos.numel() == 0:` asks whether a selection" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


def _writes():
    """Rows to write into a memory, with a mask of which to write (none, in the second)."""
    masks = [torch.tensor([1, 0, 1, 1, 0]), torch.zeros(5), torch.tensor([0, 0, 0, 1, 0])]
    return [(torch.randint(0, 4, (5,)), torch.randn(5, 3), m.bool()) for m in masks]


def memory_write(compile):
    def write(memory, slots, values, write_mask):
        idx = torch.nonzero(write_mask).squeeze(1)
        if len(idx) == 0:
            return memory
        return memory.index_add(0, slots[idx], values[idx])

    write = compile(write)
    memory = torch.zeros(4, 3)
    for slots, values, mask in _writes():
        memory = write(memory, slots, values, mask)
    return memory


def memory_write_unchecked(compile):
    def write(memory, slots, values, write_mask):
        idx = torch.nonzero(write_mask).squeeze(1)
        return memory.index_add(0, slots[idx], values[idx])

    write = compile(write)
    memory = torch.zeros(4, 3)
    for slots, values, mask in _writes():
        memory = write(memory, slots, values, mask)
    return memory


def test_dropping_an_empty_check_before_an_index_add_removes_the_break() -> None:
    proof = prove(
        "empty_check.drop",
        memory_write,
        memory_write_unchecked,
        before_config=DYNAMIC_SELECTION,
    )
    assert "`if len(idx) == 0:` asks whether a selection" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
    assert proof.after.graphs == 1


def cluster_centroids(compile):
    def centroid(points, assign, k):
        members = points[assign == k]
        if len(members) == 0:
            raise RuntimeError(f"cluster {k} is empty")
        return members.mean(0)

    centroid = compile(centroid)
    points, assign = torch.randn(12, 2), torch.arange(12) % 3
    return [centroid(points, assign, k) for k in range(3)]


def cluster_centroids_checked(compile):
    def centroid(points, assign, k):
        members = points[assign == k]
        torch._check(members.numel() > 0)
        return members.mean(0)

    centroid = compile(centroid)
    points, assign = torch.randn(12, 2), torch.arange(12) % 3
    return [centroid(points, assign, k) for k in range(3)]


def test_torch_check_states_a_cluster_is_not_empty() -> None:
    proof = prove(
        "empty_check.torch_check",
        cluster_centroids,
        cluster_centroids_checked,
        before_config=DYNAMIC_SELECTION,
    )
    assert "torch._check(members.numel() > 0)" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0


def masked_lm_accuracy(compile):
    def accuracy(logits, labels):
        picked = labels != -100
        preds = logits[picked].argmax(-1)
        if preds.numel() == 0:
            raise ValueError("no masked tokens in the batch")
        return (preds == labels[picked]).float().mean()

    accuracy = compile(accuracy)
    return [accuracy(hidden, labels) for hidden, labels in _mlm_logits()]


def masked_lm_accuracy_checked(compile):
    def accuracy(logits, labels):
        picked = labels != -100
        preds = logits[picked].argmax(-1)
        torch._check(preds.numel() > 0)
        return (preds == labels[picked]).float().mean()

    accuracy = compile(accuracy)
    return [accuracy(hidden, labels) for hidden, labels in _mlm_logits()]


def _mlm_logits():
    return [(torch.randn(2, 6, 11), labels) for _, labels in _mlm_batches()]


def test_torch_check_states_a_batch_has_masked_tokens() -> None:
    proof = prove(
        "empty_check.torch_check",
        masked_lm_accuracy,
        masked_lm_accuracy_checked,
        before_config=DYNAMIC_SELECTION,
    )
    assert "torch._check(preds.numel() > 0)" in said(proof.before)
    assert proof.after.count("graph_breaks") == 0
