"""Every fix that pt2doctor's advice tables name, with an id a test applies it by.

The advice tables are the paragraphs of ``pt2doctor.analysis.breaks.advice``: one per graph-break
category and recompile cause, and the specialized paragraphs for what a break's code shows.
Each fix they name is an entry here: the paragraph it is in (``text``: the constant's name, or
``TABLE[key]``), the words that name the fix (``quote``, found verbatim in that paragraph), and
what applying it must remove (``kind``: a ``break``, a ``recompile``, a ``skip``ped frame, an
``error``, the ops of a large graph: ``graph_size``, the recompiles of a function that
serves two modes, which separate functions compile once each: ``variants``, or compiled
results that differ from eager's: ``results``). A paragraph that
contains another catalogued paragraph whole (SKIPPED_FRAME_ADVICE ends with SKIPPED_LOOP_FIX)
is covered by it.

tests/unit/test_fix_catalog.py holds the three together: every paragraph has at least one entry
here (or is listed in ``NOT_FIXES`` with the reason), every quote is in its paragraph, and every
entry is applied by ``fixproof.prove`` in at least two programs (distinct ``before`` functions)
among the tests. ``fallback``: the paragraph is shown only where no more specific fix applies
(a recompile cause's table entry), so a program may get the specific one instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pt2doctor.analysis.breaks import advice, library_breaks
from pt2doctor.analysis.recompiles import fixes, state_fixes, value_fixes

# The modules whose paragraphs name fixes: the advice tables, the library breaks' known fixes,
# and the recompile fixes' fixed paragraphs (a ``text`` names them ``module:NAME``).
MODULES = {
    "advice": advice,
    "library_breaks": library_breaks,
    "state_fixes": state_fixes,
    "value_fixes": value_fixes,
    "fixes": fixes,
}

Kind = Literal["break", "recompile", "skip", "error", "graph_size", "variants", "results"]


@dataclass(frozen=True)
class CatalogFix:
    text: str
    quote: str
    kind: Kind
    fallback: bool = False

    def paragraph(self) -> str:
        """The advice paragraph this fix is in, from its module (not copied here): the advice
        module's, or ``module:NAME`` for a recompile fix's paragraph in recompiles/."""
        module, _, text = self.text.rpartition(":")
        name, _, key = text.partition("[")
        value = getattr(MODULES[module or "advice"], name)
        return value[key.rstrip("]")] if key else value


def _fix(text: str, quote: str, kind: Kind = "break", fallback: bool = False) -> CatalogFix:
    return CatalogFix(text, quote, kind, fallback)


FIXES: dict[str, CatalogFix] = {
    # --- the break categories' paragraphs ---------------------------------------------------
    "scalar.capture_scalar_outputs": _fix(
        "BREAK_ADVICE[data_dependent_scalar]", "capture_scalar_outputs = True keeps it"
    ),
    "value_branch.where": _fix("VALUE_BRANCH_ADVICE", "torch.where(cond, a, b)"),
    "value_branch.cond": _fix("VALUE_BRANCH_ADVICE", "torch.cond(pred, true_fn, false_fn)"),
    "shape.where_mask": _fix("BREAK_ADVICE[data_dependent_shape]", "torch.where(mask, x, 0)"),
    "shape.capture_dynamic_output_shape_ops": _fix(
        "BREAK_ADVICE[data_dependent_shape]", "capture_dynamic_output_shape_ops = True"
    ),
    "print.is_compiling": _fix(
        "BREAK_ADVICE[print_or_logging]", "`if not torch.compiler.is_compiling():` around it"
    ),
    "print.move_out": _fix("BREAK_ADVICE[print_or_logging]", "moving it out of the compiled"),
    "side_effect.outside": _fix(
        "BREAK_ADVICE[python_side_effect]", "doing the mutation outside the compiled region"
    ),
    "hop_side_effect.return": _fix(
        "HOP_SIDE_EFFECT_ADVICE", "returning the value from the function instead of mutating"
    ),
    "builtin.custom_op": _fix(
        "BREAK_ADVICE[unsupported_builtin_or_c_extension]", "torch.library.custom_op"
    ),
    "builtin.move_out": _fix(
        "BREAK_ADVICE[unsupported_builtin_or_c_extension]", "moving it out of the hot compiled"
    ),
    "disable.remove": _fix("BREAK_ADVICE[explicit_disable]", "remove it or move the disabled"),
    "io.outside": _fix("BREAK_ADVICE[io]", "doing the I/O before or after the compiled call"),
    "other.move_out": _fix(
        "BREAK_ADVICE[other]", "move the unsupported code out of the compiled function"
    ),
    # --- logging and print --------------------------------------------------------------------
    "logger.ignore_logging_functions": _fix(
        "LOGGER_ADVICE", "torch._dynamo.config.ignore_logging_functions"
    ),
    "logger.outside": _fix("LOGGER_ADVICE", "log outside the compiled function"),
    "warnings.reorderable": _fix(
        "WARNINGS_ADVICE", "Adding warnings.warn to torch._dynamo.config.reorderable"
    ),
    "print.reorderable": _fix(
        "PRINT_REORDER_FIX", "Adding print to torch._dynamo.config.reorderable"
    ),
    "print_format.own_argument": _fix(
        "PRINT_FORMAT_ADVICE", "Pass the tensor to print as an argument of its own"
    ),
    "warnings_category.outside": _fix(
        "WARNINGS_CATEGORY_ADVICE", "Issue the warning outside the compiled function"
    ),
    "warnings_category.is_compiling": _fix(
        "WARNINGS_CATEGORY_ADVICE", "guard it with `if not torch.compiler.is_compiling():`"
    ),
    "warnings_inlined.is_compiling": _fix(
        "WARNINGS_INLINED_ADVICE", "Guard it: `if not torch.compiler.is_compiling():`"
    ),
    "print.not_deferred_outside": _fix(
        "PRINT_NOT_DEFERRED_ADVICE", "Consider printing outside the compiled function"
    ),
    "print.symint_outside": _fix("SYMINT_CAVEAT", "print that size outside the compiled region"),
    "print_inlined.is_compiling": _fix(
        "PRINT_INLINED_ADVICE", "Guard it: `if not torch.compiler.is_compiling():`"
    ),
    "reorder_refused.outside": _fix(
        "REORDER_REFUSED_ADVICE", "Print that value outside the compiled region"
    ),
    # --- a value read with .item() / .tolist() --------------------------------------------------
    "scalar_stored.return_tensor": _fix(
        "SCALAR_STORED_ADVICE", "return the tensor from the compiled function (.detach())"
    ),
    "scalar_stored.capture_attr": _fix(
        "SCALAR_ATTR_CAPTURE", "capture_scalar_outputs = True keeps the read in the graph and"
    ),
    "scalar_logged.is_compiling": _fix(
        "SCALAR_LOGGED_ADVICE", "Guard the line with `if not torch.compiler.is_compiling():`"
    ),
    "scalar_logged.return_tensor": _fix(
        "SCALAR_LOGGED_ADVICE", "(.detach()) and log it outside the compiled call"
    ),
    "scalar_size.from_shape": _fix("SCALAR_SIZE_ADVICE", "take it from a shape the code"),
    "scalar_size.mask": _fix("SCALAR_SIZE_ADVICE", "keep the shape and mask the part past it"),
    "scalar_cast.keep_tensor": _fix("SCALAR_CAST_ADVICE", "without float() works in the"),
    "scalar_item.keep_tensor": _fix("SCALAR_ITEM_ADVICE", "(no .item()) is a tensor"),
    "mask_branch.always": _fix("MASK_BRANCH_ADVICE", "build it always"),
    "module_by_value.disable": _fix(  # one break by design; the recompiles per routing go
        "MODULE_BY_VALUE_ADVICE", "decorated with `@torch.compiler.disable`", "recompile"
    ),
    "module_by_value.mask_loop": _fix("MODULE_BY_VALUE_ADVICE", "loop over the modules instead"),
    "bookkeeping.after_call": _fix(
        "BOOKKEEPING_ADVICE", "return the tensors and do the bookkeeping after the call"
    ),
    "bookkeeping.in_tensors": _fix("BOOKKEEPING_ADVICE", "keep it in tensors"),
    "scalar_returned.tensor": _fix("SCALAR_RETURNED_ADVICE", "Return the tensor itself"),
    "lengths_loop.mask": _fix("LENGTHS_LOOP_ADVICE", "mask the positions past each length"),
    "returned_branch.condition": _fix(
        "RETURNED_BRANCH_ADVICE", "return the condition itself, as a tensor"
    ),
    "empty_check.drop": _fix("EMPTY_CHECK_ADVICE", "drop the check, and the break with it"),
    "empty_check.torch_check": _fix("EMPTY_CHECK_ADVICE", "state it with torch._check("),
    "logging_module.is_compiling": _fix(
        "LOGGING_MODULE_ADVICE", "Guard the line with `if not torch.compiler.is_compiling():`"
    ),
    "logging_module.ignore_logging_functions": _fix(
        "LOGGING_MODULE_ADVICE", "torch._dynamo.config.ignore_logging_functions"
    ),
    # --- calls Dynamo does not trace ------------------------------------------------------------
    "torch_generator.draw_outside": _fix(
        "TORCH_GENERATOR_ADVICE", "Draw the random tensor with the generator outside"
    ),
    "setup.outside": _fix("SETUP_ADVICE", "Do it once, outside, and pass the result in"),
    "requires_grad.outside": _fix(
        "REQUIRES_GRAD_ADVICE", "Change it outside the compiled function, around the call"
    ),
    "backward.after_call": _fix("BACKWARD_ADVICE", "call `.backward()` on it after the call"),
    "rnn.outside": _fix("RNN_ADVICE", "Keep the RNN out of the compiled region"),
    "packing.padded": _fix("PACKING_ADVICE", "run the RNN on the padded batch"),
    "host_random.pass_tensor": _fix(
        "HOST_RANDOM_ADVICE", "draw them outside the compiled call and pass them in as a tensor"
    ),
    "host_random.torch_rand": _fix("HOST_RANDOM_ADVICE", "use torch's RNG (`torch.rand`)"),
    # --- frames, graphs and errors --------------------------------------------------------------
    "skipped_frame.remove_break": _fix(
        "SKIPPED_LOOP_FIX", "Remove the break inside the loop", "skip"
    ),
    "skipped_frame.compile_body": _fix(
        "SKIPPED_LOOP_FIX", "compile the loop body as its own function", "skip"
    ),
    "large_graph.vectorize": _fix("LARGE_GRAPH_ADVICE", "Vectorize the loop", "graph_size"),
    "compile_error.disable": _fix(
        "COMPILE_ERROR_ADVICE", "torch.compiler.disable the failing function", "error"
    ),
    # --- recompile causes (shown where no more specific fix applies) -----------------------------
    "size.mark_dynamic": _fix(
        "RECOMPILE_ADVICE[size]", "mark the dim dynamic before the first call", "recompile", True
    ),
    "size.buckets": _fix(
        "RECOMPILE_ADVICE[size]", "pad inputs to a few buckets", "recompile", True
    ),
    "mark_dynamic.maybe": _fix(
        "MARK_DYNAMIC_ADVICE",
        "torch._dynamo.maybe_mark_dynamic(x, dim) is the safe form",
        "recompile",
        True,
    ),
    "python_constant.tensor": _fix(
        "RECOMPILE_ADVICE[python_constant]",
        "pass them as tensors or keep them outside",
        "recompile",
        True,
    ),
    "dtype.cast": _fix(
        "RECOMPILE_ADVICE[dtype]",
        "Cast inputs to one dtype before the compiled call",
        "recompile",
        True,
    ),
    "stride.contiguous": _fix(
        "RECOMPILE_ADVICE[stride]", "Make inputs contiguous", "recompile", True
    ),
    "requires_grad.consistent": _fix(
        "RECOMPILE_ADVICE[requires_grad]",
        "Keep requires_grad consistent per call site",
        "recompile",
        True,
    ),
    "grad_mode.separate": _fix(
        "RECOMPILE_ADVICE[grad_mode]",
        "compile separate functions if both are hot",
        "variants",
        True,
    ),
    "autocast.consistent": _fix(
        "RECOMPILE_ADVICE[autocast]",
        "Enter autocast consistently around the compiled call",
        "recompile",
        True,
    ),
    "device.one": _fix("RECOMPILE_ADVICE[device]", "Move inputs to one device", "recompile", True),
    "object_id.reuse": _fix(
        "RECOMPILE_ADVICE[object_id]", "Create it once and reuse it", "recompile", True
    ),
    "attribute_value.tensor": _fix(
        "RECOMPILE_ADVICE[attribute_value]",
        "pass it as a tensor or keep it out",
        "recompile",
        True,
    ),
    # --- the library breaks' known fixes (breaks/library_breaks.py) ------------------------------
    "zero_grad.outside": _fix(
        "library_breaks:ZERO_GRAD", "Call it outside the compiled function, where it stands"
    ),
    "grad_scaler.outside": _fix(
        "library_breaks:GRAD_SCALER", "Call `scaler.scale(loss).backward()`"
    ),
    "hf_loss_type.set": _fix("library_breaks:HF_LOSS_TYPE", "Set `model.loss_type = "),
    "hf_use_cache.off": _fix(
        "library_breaks:HF_USE_CACHE", "Set `model.config.use_cache = False` for training"
    ),
    # --- recompile fixes beyond the tables (recompiles/) -----------------------------------------
    "tensor_value.index_copy": _fix(
        "value_fixes:TENSOR_VALUE_FIX", "write with `cache.index_copy_(0, ", "recompile"
    ),
    "lr_tensor.tensor_lr": _fix(
        "value_fixes:LR_TENSOR_FIX", "Create the optimizer with a tensor learning rate", "recompile"
    ),
    "momentum.step_outside": _fix(
        "value_fixes:MOMENTUM_FIX",
        "run the optimizer step outside the compiled function",
        "recompile",
    ),
    "hooks.register_once": _fix(
        "state_fixes:HOOKS_FIX",
        "Register the hooks once, before the first compiled call",
        "results",
    ),
    "inference_mode.alike": _fix(
        "state_fixes:INFERENCE_MODE_FIX", "Make the calls alike", "recompile"
    ),
    "inference_tensor.alike": _fix(
        "state_fixes:INFERENCE_TENSOR_FIX", "Make the inputs alike", "recompile"
    ),
    "grad_mode_too.separate": _fix(
        "state_fixes:GRAD_MODE_TOO", "Compile a separate function for each mode", "variants"
    ),
    "hf_generate.static_cache": _fix(
        "fixes:HF_GENERATE_FIX", 'cache_implementation="static", max_length=N', "recompile"
    ),
    "hf_encoder_decoder.static_cache": _fix(
        "fixes:HF_ENCODER_DECODER_FIX", 'padding="max_length", max_length=L', "recompile"
    ),
}

# Paragraphs of the advice module that name no fix to apply, and why.
NOT_FIXES: dict[str, str] = {
    "SCALAR_KEPT_CAPTURE": "says capture_scalar_outputs does not help a list or a log; no fix",
    "RECOMPILE_ADVICE[other]": "points to the failed guard's text; names no change",
    "LIMIT_HIT_ADVICE": "says to fix the recompile cause shown beside it, not the limit",
    "library_breaks:OPTIMIZER_STEP": "PyTorch's break by design: nothing to fix",
    "library_breaks:LR_SCHEDULER_STEP": "PyTorch's break by design: nothing to fix",
    "state_fixes:OPTIMIZER_STATE_FIX": "the optimizer's first step, by design: pre-warm",
    "fixes:HF_STATIC_GENERATE": "a static-cache generate()'s two variants, by design: pre-warm",
    # Its fix ("call that torch API outside the compiled function") has no program to prove it
    # on torch 2.13: the one `torch._dynamo.graph_break()` user code reaches in torch's source
    # is the optimizer step's (torch/optim/optimizer.py `_use_grad`), which OPTIMIZER_STEP
    # takes first (searched in the installed torch, 2026-12-06). It stays for other versions.
    "library_breaks:TORCH_ASKS": "no torch 2.13 API reaches it (see above): unprovable here",
}
