"""Fixes for breaks and recompiles in library code, applied: tests/fixproof.py.

``opt.zero_grad()`` and torch.amp.GradScaler's calls inside a compiled training step (torch
marks both skipped), transformers' loss-type warning and its gradient-checkpointing warning
logged from inside a compiled forward, and Hugging Face ``generate()`` on a compiled decoder
or encoder-decoder model with a KV cache that grows every step: each fix pt2doctor names for
them (library_breaks.py, recompiles/fixes.py), applied to two programs.

The transformers models are random-init tiny configs (nothing is downloaded), without dropout
where they train under gradient checkpointing: compiled dropout under a checkpoint draws other
numbers than eager does, with or without the fix. The ``generate()`` programs decode greedily
and return the tokens and each step's scores; the encoder-decoder fix pads the prompts to one
length, with an attention mask that hides the padding, so the scores stay eager's.

``torch_asks.outside`` (TORCH_ASKS: a ``torch._dynamo.graph_break()`` in torch's own source) has
no program here: in torch 2.13 the only such call reachable from user code is the optimizer's
``_use_grad`` (torch/optim/optimizer.py), which pt2doctor rightly gives OPTIMIZER_STEP instead
(by design, nothing to fix).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from fixproof import prove  # noqa: E402


def _params(module):
    return [p.detach().clone() for p in module.parameters()]


def _transformers():
    return pytest.importorskip("transformers")


# --- zero_grad.outside: opt.zero_grad() inside the compiled step ------------------------------


def _classifier():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))


def classifier_step_zeroes_grads_first(compile):
    """The whole training step compiled, the way tutorials write it: zero_grad, forward,
    backward, step."""
    model = _classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    train_step = compile(train_step)
    losses = [train_step(torch.randn(16, 10), torch.randint(0, 4, (16,))) for _ in range(4)]
    return losses, _params(model)


def classifier_step_zeroes_grads_first_fixed(compile):
    model = _classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def train_step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    train_step = compile(train_step)
    losses = []
    for _ in range(4):
        x, y = torch.randn(16, 10), torch.randint(0, 4, (16,))
        opt.zero_grad()
        losses.append(train_step(x, y))
    return losses, _params(model)


def test_zero_grad_before_the_compiled_classifier_step() -> None:
    proof = prove(
        "zero_grad.outside",
        classifier_step_zeroes_grads_first,
        classifier_step_zeroes_grads_first_fixed,
    )
    assert proof.shown


class Tagger(nn.Module):
    """A token tagger: embeddings, a 1-D convolution over the sequence, a tag per token."""

    def __init__(self, vocab: int = 50, tags: int = 5) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.conv = nn.Conv1d(16, 32, kernel_size=3, padding=1)
        self.head = nn.Linear(32, tags)

    def forward(self, tokens):
        h = self.conv(self.embed(tokens).transpose(1, 2)).transpose(1, 2)
        return self.head(F.gelu(h))


def tagger_step_zeroes_grads_last(compile):
    """A sequence tagger's step that clears the gradients at its end, after the update."""
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def train_step(tokens, tags):
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), tags.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        return loss.detach()

    train_step = compile(train_step)
    losses = [
        train_step(torch.randint(0, 50, (4, 12)), torch.randint(0, 5, (4, 12))) for _ in range(3)
    ]
    return losses, _params(model)


def tagger_step_zeroes_grads_last_fixed(compile):
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def train_step(tokens, tags):
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), tags.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.detach()

    train_step = compile(train_step)
    losses = []
    for _ in range(3):
        losses.append(train_step(torch.randint(0, 50, (4, 12)), torch.randint(0, 5, (4, 12))))
        opt.zero_grad()
    return losses, _params(model)


def test_zero_grad_after_the_compiled_tagger_step() -> None:
    proof = prove(
        "zero_grad.outside", tagger_step_zeroes_grads_last, tagger_step_zeroes_grads_last_fixed
    )
    assert proof.shown


# --- grad_scaler.outside: GradScaler's calls inside the compiled step -------------------------


def amp_classifier_step(compile):
    """A float16 mixed-precision step (CPU autocast) with the whole GradScaler sequence inside
    the compiled function."""
    model = _classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu")

    def train_step(x, y):
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.detach()

    train_step = compile(train_step)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        losses.append(train_step(torch.randn(16, 10), torch.randint(0, 4, (16,))))
    return losses, _params(model), scaler.get_scale()


def amp_classifier_step_fixed(compile):
    model = _classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu")

    def compute_loss(x, y):
        with torch.autocast("cpu", dtype=torch.float16):
            return F.cross_entropy(model(x), y)

    compute_loss = compile(compute_loss)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = compute_loss(torch.randn(16, 10), torch.randint(0, 4, (16,)))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.detach())
    return losses, _params(model), scaler.get_scale()


def test_grad_scaler_calls_leave_the_compiled_classifier_step() -> None:
    proof = prove("grad_scaler.outside", amp_classifier_step, amp_classifier_step_fixed)
    assert proof.shown
    assert proof.after.count("graph_breaks") == 0
    # Every GradScaler row gives the fix, the step's too: it splits nothing by itself (its
    # frame between the backward's and the update's breaks compiled no ops), and once said
    # "nothing to fix" beside rows that told to move it out.
    rows = [row for row in proof.before.report["graph_breaks"] if "scaler." in row["site"]["code"]]
    assert len(rows) == 3
    assert all("scaler.step(opt)" in row["advice"] for row in rows)
    assert not [row for row in rows if "nothing to fix" in row["advice"]]


class BagOfWords(nn.Module):
    """A sentiment classifier: mean-pooled token embeddings and a linear head."""

    def __init__(self, vocab: int = 60) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 24)
        self.head = nn.Sequential(nn.Linear(24, 24), nn.Tanh(), nn.Linear(24, 2))

    def forward(self, tokens):
        return self.head(self.embed(tokens).mean(1))


_ACCUMULATE = 2


def _review_batches():
    return [(torch.randint(0, 60, (8, 10)), torch.randint(0, 2, (8,))) for _ in range(4)]


def amp_accumulating_micro_step(compile):
    """Gradient accumulation under float16 autocast: the compiled micro-step scales its share
    of the loss and backpropagates it; unscale, clipping and the update come every second
    micro-batch, outside."""
    model = BagOfWords()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cpu")

    def micro_step(tokens, labels):
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.cross_entropy(model(tokens), labels)
        scaler.scale(loss / _ACCUMULATE).backward()
        return loss.detach()

    micro_step = compile(micro_step)
    losses = []
    for i, (tokens, labels) in enumerate(_review_batches()):
        losses.append(micro_step(tokens, labels))
        if (i + 1) % _ACCUMULATE == 0:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    return losses, _params(model)


def amp_accumulating_micro_step_fixed(compile):
    model = BagOfWords()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cpu")

    def compute_loss(tokens, labels):
        with torch.autocast("cpu", dtype=torch.float16):
            return F.cross_entropy(model(tokens), labels)

    compute_loss = compile(compute_loss)
    losses = []
    for i, (tokens, labels) in enumerate(_review_batches()):
        loss = compute_loss(tokens, labels)
        scaler.scale(loss / _ACCUMULATE).backward()
        losses.append(loss.detach())
        if (i + 1) % _ACCUMULATE == 0:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    return losses, _params(model)


def test_grad_scaler_backward_leaves_the_compiled_micro_step() -> None:
    proof = prove(
        "grad_scaler.outside", amp_accumulating_micro_step, amp_accumulating_micro_step_fixed
    )
    assert proof.shown
    assert proof.after.count("graph_breaks") == 0


# --- hf_loss_type.set: a model class that maps to no transformers loss type -------------------


def _finetune(forward, vocab, steps=3, mask=False):
    """A causal-LM fine-tuning loop over a compiled model: labels are the inputs."""
    opt = torch.optim.AdamW(forward.parameters(), lr=1e-3)
    losses = []
    for _ in range(steps):
        ids = torch.randint(0, vocab, (2, 12))
        extra = {"attention_mask": torch.ones_like(ids)} if mask else {}
        loss = forward(input_ids=ids, labels=ids, **extra).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    return losses


def _gpt2(transformers, n_layer=2, **more):
    config = transformers.GPT2Config(
        n_layer=n_layer, n_embd=32, n_head=2, vocab_size=64, n_positions=32,
        bos_token_id=0, eos_token_id=0, **more,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def gpt2_finetune(compile):
    """GPT2LMHeadModel fine-tuned with labels under torch.compile: its class name maps to no
    loss type, so transformers logs from its loss on every call."""
    model = _gpt2(_transformers())
    return _finetune(compile(model), 64)


def gpt2_finetune_fixed(compile):
    model = _gpt2(_transformers())
    model.loss_type = "ForCausalLM"
    return _finetune(compile(model), 64)


def test_loss_type_set_on_a_gpt2_finetune() -> None:
    proof = prove("hf_loss_type.set", gpt2_finetune, gpt2_finetune_fixed)
    assert proof.shown
    assert proof.after.count("graph_breaks") == 0
    assert (proof.before.graphs, proof.after.graphs) == (2, 1)


def _bert_decoder(transformers):
    config = transformers.BertConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
        vocab_size=80, max_position_embeddings=32, is_decoder=True,
    )  # fmt: skip
    return transformers.BertLMHeadModel(config)


def bert_decoder_finetune(compile):
    """BERT as a causal decoder (BertLMHeadModel, is_decoder=True) trained with labels and an
    attention mask: its class name maps to no loss type either."""
    model = _bert_decoder(_transformers())
    return _finetune(compile(model), 80, mask=True)


def bert_decoder_finetune_fixed(compile):
    model = _bert_decoder(_transformers())
    model.loss_type = "ForCausalLM"
    return _finetune(compile(model), 80, mask=True)


def test_loss_type_set_on_a_bert_decoder_finetune() -> None:
    proof = prove("hf_loss_type.set", bert_decoder_finetune, bert_decoder_finetune_fixed)
    assert proof.shown
    assert proof.after.count("graph_breaks") == 0


# --- hf_use_cache.off: gradient checkpointing with the config's use_cache=True ----------------


def _checkpointing(model):
    # activation_checkpointing_enable replaces gradient_checkpointing_enable in later 5.x
    enable = getattr(model, "activation_checkpointing_enable", None)
    (enable or model.gradient_checkpointing_enable)()
    return model.train()


def _pythia(transformers):
    config = transformers.GPTNeoXConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=64,
        vocab_size=96, max_position_embeddings=64,
    )  # fmt: skip
    return transformers.GPTNeoXForCausalLM(config)


def pythia_checkpointed_finetune(compile):
    """A Pythia-style GPT-NeoX fine-tuned with gradient checkpointing on, its config keeping
    the default use_cache=True."""
    model = _checkpointing(_pythia(_transformers()))
    return _finetune(compile(model), 96, mask=True)


def pythia_checkpointed_finetune_fixed(compile):
    model = _checkpointing(_pythia(_transformers()))
    model.config.use_cache = False
    return _finetune(compile(model), 96, mask=True)


def test_use_cache_off_for_a_checkpointed_pythia() -> None:
    proof = prove(
        "hf_use_cache.off", pythia_checkpointed_finetune, pythia_checkpointed_finetune_fixed
    )
    assert proof.shown
    assert proof.after.count("graph_breaks") == 0


_NO_DROPOUT = {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}


def gpt2_checkpointed_finetune(compile):
    """GPT2 fine-tuned with gradient checkpointing, its loss type already set (the fix above),
    use_cache left at its default."""
    model = _checkpointing(_gpt2(_transformers(), **_NO_DROPOUT))
    model.loss_type = "ForCausalLM"
    return _finetune(compile(model), 64)


def gpt2_checkpointed_finetune_fixed(compile):
    model = _checkpointing(_gpt2(_transformers(), **_NO_DROPOUT))
    model.loss_type = "ForCausalLM"
    model.config.use_cache = False
    return _finetune(compile(model), 64)


def test_use_cache_off_for_a_checkpointed_gpt2() -> None:
    proof = prove("hf_use_cache.off", gpt2_checkpointed_finetune, gpt2_checkpointed_finetune_fixed)
    assert proof.shown
    assert proof.after.count("graph_breaks") == 0


# --- hf_generate.static_cache: generate() on a compiled decoder -------------------------------


def _greedy(model, ids, **more):
    out = model.generate(
        ids, attention_mask=torch.ones_like(ids), do_sample=False, output_scores=True,
        return_dict_in_generate=True, **more,
    )  # fmt: skip
    return out.sequences, list(out.scores)


def _gpt2_autocomplete(compile, **cache):
    model = _gpt2(_transformers(), n_layer=1, pad_token_id=0).eval()
    model.forward = compile(model.forward)
    prompts = [torch.randint(1, 64, (1, n)) for n in (5, 7)]
    return [_greedy(model, ids, max_length=12, **cache) for ids in prompts]


def gpt2_autocomplete(compile):
    """Autocompletion with a compiled GPT2 forward: prompts of two lengths, each completed to
    12 tokens by greedy generate() with its default dynamic cache."""
    return _gpt2_autocomplete(compile)


def gpt2_autocomplete_fixed(compile):
    return _gpt2_autocomplete(compile, cache_implementation="static")


def test_static_cache_for_gpt2_autocompletion() -> None:
    proof = prove("hf_generate.static_cache", gpt2_autocomplete, gpt2_autocomplete_fixed)
    assert proof.shown


def _llama_chat(compile, **cache):
    transformers = _transformers()
    config = transformers.LlamaConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=64, vocab_size=96, max_position_embeddings=64,
        bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    model.forward = compile(model.forward)
    prompts = torch.randint(3, 96, (2, 6))
    return [_greedy(model, prompts, max_length=12, **cache)]


def llama_batch_replies(compile):
    """A tiny Llama (grouped-query attention) answering a batch of two prompts with greedy
    generate() over its compiled forward."""
    return _llama_chat(compile)


def llama_batch_replies_fixed(compile):
    return _llama_chat(compile, cache_implementation="static")


def test_static_cache_for_llama_batch_replies() -> None:
    proof = prove("hf_generate.static_cache", llama_batch_replies, llama_batch_replies_fixed)
    assert proof.shown


# --- hf_encoder_decoder.static_cache: generate() on a compiled encoder-decoder ----------------

_SOURCE_LENGTH = 8


def _padded(ids, pad):
    """The tokenizer's padding="max_length": pad on the right, mask the padding out."""
    mask = torch.ones_like(ids)
    extra = _SOURCE_LENGTH - ids.shape[1]
    return F.pad(ids, (0, extra), value=pad), F.pad(mask, (0, extra), value=0)


def _seq2seq(model, compile, sources, pad, fixed):
    model.forward = compile(model.forward)
    outputs = []
    for ids in sources:
        more = {}
        mask = torch.ones_like(ids)
        if fixed:
            ids, mask = _padded(ids, pad)
            more = {"cache_implementation": "static"}
        out = model.generate(
            ids, attention_mask=mask, do_sample=False, max_length=8, output_scores=True,
            return_dict_in_generate=True, **more,
        )  # fmt: skip
        outputs.append((out.sequences, list(out.scores)))
    return outputs


def _bart(transformers):
    config = transformers.BartConfig(
        vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None,
        tie_word_embeddings=False,
    )  # fmt: skip
    return transformers.BartForConditionalGeneration(config).eval()


def bart_summaries(compile):
    """A BART summarizer's generate() over its compiled forward, on documents of three
    lengths, with the default dynamic cache."""
    model = _bart(_transformers())
    sources = [torch.randint(3, 64, (1, n)) for n in (5, 8)]
    return _seq2seq(model, compile, sources, pad=1, fixed=False)


def bart_summaries_fixed(compile):
    model = _bart(_transformers())
    sources = [torch.randint(3, 64, (1, n)) for n in (5, 8)]
    return _seq2seq(model, compile, sources, pad=1, fixed=True)


def test_static_cache_and_padding_for_bart_summaries() -> None:
    proof = prove(
        "hf_encoder_decoder.static_cache", bart_summaries, bart_summaries_fixed,
        rtol=1e-4, atol=1e-4,
    )  # fmt: skip
    assert proof.shown


def _t5(transformers):
    config = transformers.T5Config(
        vocab_size=64, d_model=64, d_kv=16, d_ff=128, num_layers=1, num_decoder_layers=1,
        num_heads=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
        tie_word_embeddings=False,
    )  # fmt: skip
    return transformers.T5ForConditionalGeneration(config).eval()


def t5_translations(compile):
    """A T5 translator's generate() over its compiled forward: a batch of two sentences, then
    a batch of two longer ones, with the default dynamic cache."""
    model = _t5(_transformers())
    sources = [torch.randint(2, 64, (2, 5)), torch.randint(2, 64, (2, 7))]
    return _seq2seq(model, compile, sources, pad=0, fixed=False)


def t5_translations_fixed(compile):
    model = _t5(_transformers())
    sources = [torch.randint(2, 64, (2, 5)), torch.randint(2, 64, (2, 7))]
    return _seq2seq(model, compile, sources, pad=0, fixed=True)


def test_static_cache_and_padding_for_t5_translations() -> None:
    proof = prove(
        "hf_encoder_decoder.static_cache", t5_translations, t5_translations_fixed,
        rtol=1e-4, atol=1e-4,
    )  # fmt: skip
    assert proof.shown
