"""Every fix the performance and cold-start findings name, with the tests that apply it.

tests/fix_catalog.py holds the graph-break and recompile paragraphs; this holds the rest: the
profile's findings (analysis/time/findings.py, paired.py), the device side of a GPU trace
(analysis/time/device_findings.py) and cold start (analysis/coldstart/). Each entry: the
finding code, the words that name the fix (``quote``, verbatim in ``source``, a file under
src/pt2doctor/analysis), and each test that applies the fix to a program and checks what it
did (the finding gone, the time it saved, a cache hit, the same results), with that program
(its path under tests/programs, without ``.py``).

tests/unit/test_perf_fix_catalog.py holds them together: every such finding code has an entry,
every quote is in its source, every test exists and names its program, and every fix is
applied in at least two programs, or is in ``GAPS`` with why not (yet), and nothing else is.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PerfFix:
    code: str
    source: str
    quote: str
    applied: tuple[tuple[str, str], ...] = ()
    """(test ``file::function``, program) pairs."""


BLIND = "real/blind"
FIXES: dict[str, PerfFix] = {
    "autograd_in_inference.no_grad": PerfFix(
        "autograd_in_inference",
        "time/findings.py",
        "`torch.no_grad()`), or decorate",
        (
            (
                "test_profile.py::test_no_grad_is_tried_and_what_it_saves_is_measured_on_the_compiled_calls",
                "time/mlp_block",
            ),
            (
                "test_claims.py::test_no_grad_saves_what_its_try_measured_for_autograd_in_inference",
                "time/mlp_block",
            ),
            (
                "test_blind_more.py::test_a_decode_loop_run_with_grad_enabled_is_told_no_grad_which_makes_each_step_faster",
                f"{BLIND}/static_kv_decoder",
            ),
            (
                "test_blind_more.py::test_a_bert_encoder_served_with_grad_is_told_no_grad_and_its_saving_is_the_graph_s",
                f"{BLIND}/bert_embed_grad",
            ),
        ),
    ),
    "autograd_in_inference.inference_mode": PerfFix(
        "autograd_in_inference",
        "time/findings.py",
        "under `with torch.inference_mode():`",
        (
            (
                "test_blind_more.py::test_a_decode_loop_run_with_grad_enabled_is_told_no_grad_which_makes_each_step_faster",
                f"{BLIND}/static_kv_decoder",
            ),
            (
                "test_perf_fixes_applied.py::test_inference_mode_ends_autograd_in_inference",
                "time/mlp_block",
            ),
        ),
    ),
    "overhead_bound.batch": PerfFix(
        "overhead_bound",
        "time/findings.py",
        "batch requests: the overhead is paid per",
        (
            (
                "test_profile.py::test_one_request_at_a_time_is_overhead_bound_and_batching_fixes_it",
                "time/mlp_block",
            ),
            (
                "test_profile.py::test_a_scorer_called_one_item_at_a_time_is_told_to_batch_at_its_line",
                f"{BLIND}/item_scorer",
            ),
        ),
    ),
    "overhead_bound.reduce_overhead": PerfFix(
        "overhead_bound", "time/findings.py", 'Compile with `mode="reduce-overhead"`'
    ),
    "overhead_bound.merge_breaks": PerfFix(
        "overhead_bound",
        "time/findings.py",
        "merges them.",
        (
            (
                "test_perf_fixes_applied.py::test_the_break_removed_merges_the_overhead_bound_regions",
                "time/mlp_block",
            ),
            (
                "test_perf_fixes_applied.py::test_the_break_removed_merges_the_overhead_bound_regions",
                "time/activation_monitor",
            ),
        ),
    ),
    "library_bound.freezing": PerfFix(
        "library_bound",
        "time/findings.py",
        "= True` pre-packs weights for oneDNN",
        (
            (
                "test_profile.py::test_freezing_is_tried_on_a_library_bound_inference_loop_and_judged_by_its_time",
                "time/conv_infer",
            ),
            (
                "test_profile.py::test_freezing_is_tried_on_a_second_library_bound_loop_a_wide_mlp",
                f"{BLIND}/wide_mlp_infer",
            ),
        ),
    ),
    "library_bound.max_autotune": PerfFix(
        "library_bound", "time/findings.py", '`mode="max-autotune"` tries Triton and CUTLASS'
    ),
    "fallback_op.rewrite": PerfFix(
        "fallback_op",
        "time/findings.py",
        "Write it with ops Inductor",
        (
            (
                "test_perf_fixes_applied.py::test_a_cumsum_written_as_a_matmul_ends_the_fallback",
                "time/mlp_block",
            ),
            (
                "test_perf_fixes_applied.py::test_a_cumsum_written_as_a_matmul_ends_the_fallback",
                "time/position_ids",
            ),
        ),
    ),
    "graph_break_cost.remove": PerfFix(
        "graph_break_cost",
        "time/findings.py",
        "Removing the break saves both",
        (
            (
                "test_claims.py::test_removing_the_break_saves_what_graph_break_cost_claims",
                "time/mlp_block",
            ),
            (
                "test_perf_fixes_applied.py::test_a_statistic_kept_as_a_tensor_removes_the_break_and_its_cost",
                "time/activation_monitor",
            ),
        ),
    ),
    "eager_only_time.compile_it": PerfFix(
        "eager_only_time",
        "time/findings.py",
        "remove the break or the disable",
        (
            (
                "test_perf_fixes_applied.py::test_the_disable_removed_ends_eager_only_time",
                "time/mlp_block",
            ),
            (
                "test_perf_fixes_applied.py::test_the_disable_removed_ends_eager_only_time",
                "time/disabled_norm",
            ),
        ),
    ),
    "eager_outside_compiled.compile_function": PerfFix(
        "eager_outside_compiled",
        "time/findings.py",
        "Time `torch.compile` on that function",
        (
            (
                "test_profile.py::test_compiling_the_function_outside_the_model_is_tried_and_its_saving_measured",
                "time/sample_post",
            ),
            (
                "test_profile.py::test_compiling_the_function_outside_the_model_is_tried_and_its_saving_measured",
                "time/postprocess_outside",
            ),
            (
                "test_claims.py::test_compiling_the_function_outside_the_model_saves_what_its_try_measured",
                "time/postprocess_outside",
            ),
        ),
    ),
    "compiled_slower_than_eager.drop_compile": PerfFix(
        "compiled_slower_than_eager",
        "time/paired.py",
        "drop torch.compile for it",
        (
            (
                "test_claims.py::test_serving_the_decode_eagerly_saves_what_compiled_slower_than_eager_claims",
                f"{BLIND}/small_decode_slower",
            ),
            (
                "test_claims.py::test_scoring_one_item_eagerly_saves_what_compiled_slower_than_eager_claims",
                f"{BLIND}/item_scorer",
            ),
        ),
    ),
    "eager_optimizer.fused": PerfFix(
        "eager_optimizer",
        "time/findings.py",
        "Pass fused=True to the optimizer",
        (
            (
                "test_claims.py::test_fused_adamw_saves_what_the_eager_optimizer_finding_claims",
                f"{BLIND}/eager_optimizer_loop",
            ),
            (
                "test_claims.py::test_fused_adamw_on_a_second_program_saves_what_the_finding_claims",
                f"{BLIND}/mlp_adamw_train",
            ),
            (
                "test_blind_programs.py::test_an_eager_adamw_is_named_as_the_optimizer_and_fused_true_shrinks_it",
                f"{BLIND}/eager_optimizer_loop",
            ),
        ),
    ),
    "data_loading.workers": PerfFix(
        "data_loading",
        "time/findings.py",
        "num_workers=N (N > 0",
        (
            (
                "test_profile.py::test_a_dataloader_without_workers_is_the_step_s_wait_and_workers_shorten_it",
                "time/loader_eval",
            ),
            (
                "test_profile.py::test_workers_are_tried_and_what_they_save_is_the_loop_s_time",
                "time/loader_eval",
            ),
            (
                "test_profile.py::test_workers_are_tried_and_what_they_save_is_the_loop_s_time",
                "time/text_loader",
            ),
        ),
    ),
    "guard_overhead.fewer_variants": PerfFix(
        "guard_overhead",
        "coldstart/guard_overhead.py",
        "Fewer variants",
        (
            (
                "test_perf_fixes_applied.py::test_fewer_variants_end_the_guard_overhead_warning",
                "run/run_hot_guards",
            ),
            (
                "test_perf_fixes_applied.py::test_fewer_variants_end_the_guard_overhead_warning",
                "run/run_hot_shapes",
            ),
        ),
    ),
    "cache_bypass.custom_graph_pass": PerfFix(
        "cache_bypass",
        "coldstart/analyse.py",
        "custom_graph_pass.CustomGraphPass` subclass",
        (
            (
                "test_cold_start.py::test_the_cache_bypass_fix_applied_makes_the_second_start_hit_with_the_same_result",
                "run/run_pass_bypass",
            ),
            (
                "test_blind_more.py::test_a_plain_function_post_grad_pass_is_a_cache_bypass_a_custom_graph_pass_ends",
                f"{BLIND}/custom_pass_coldstart",
            ),
        ),
    ),
    "cache_key_constant.buffer": PerfFix(
        "cache_key_constant",
        "coldstart/analyse.py",
        "register_buffer('{attr}', torch.tensor(...))",
        (
            (
                "test_cold_start.py::test_a_computed_float_baked_into_the_graph_is_why_a_full_cache_dir_misses",
                "run/run_baked_stats",
            ),
            (
                "test_perf_fixes_applied.py::test_a_calibrated_scale_kept_as_a_buffer_ends_the_cache_key_constant",
                "run/run_calibrated_scale",
            ),
        ),
    ),
    "stale_cache_constant.tensor": PerfFix(
        "stale_cache_constant",
        "coldstart/stale_constant.py",
        "as a 0-d tensor (`torch.tensor({base})`)",
        (
            (
                "test_cold_start.py::test_a_constant_the_cache_serves_without_its_guard_is_a_correctness_error",
                "run/run_stale_cache_constant",
            ),
            (
                "test_blind_more.py::test_an_ema_decay_passed_as_alpha_is_a_stale_cached_constant_the_tensor_fix_corrects",
                f"{BLIND}/ema_byol",
            ),
        ),
    ),
    "dtoh_sync.keep_on_device": PerfFix(
        "dtoh_sync", "time/device_findings.py", "`non_blocking=True`"
    ),
    "launch_bound.reduce_overhead": PerfFix(
        "launch_bound", "time/device_findings.py", '`torch.compile(mode="reduce-overhead")` (static'
    ),
    "cudagraphs.reduce_overhead": PerfFix(
        "cudagraphs", "time/device_findings.py", '`torch.compile(mode="reduce-overhead")` captures'
    ),
    "exposed_communication.buckets": PerfFix(
        "exposed_communication", "time/device_findings.py", "(`bucket_cap_mb`)"
    ),
    "tf32_off.allow_tf32": PerfFix(
        "tf32_off", "time/device_findings.py", "`torch.backends.cuda.matmul.allow_tf32 = True`)"
    ),
}

GPU = "a CUDA fix: no GPU on this machine or in CI; its finding is tested on recorded GPU traces"
GAPS: dict[str, str] = {
    "overhead_bound.reduce_overhead": GPU,
    "library_bound.max_autotune": GPU,
    "dtoh_sync.keep_on_device": GPU,
    "launch_bound.reduce_overhead": GPU,
    "cudagraphs.reduce_overhead": GPU,
    "exposed_communication.buckets": GPU,
    "tf32_off.allow_tf32": GPU,
}
