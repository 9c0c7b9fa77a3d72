""" "Should this be compiled?": compare the aten op sequences a function runs on representative
inputs. Identical sequences: one graph serves all of them, a good candidate. Different ones:
where they diverge, the likely cause, and what to do (pure: works on recorded sequences)."""

from __future__ import annotations

from dataclasses import dataclass

ADVICE = (
    "Keep the tensor compute that is the same for every input in the compiled region and the "
    "Python decisions outside it; pack variable-length Python data into tensors (padding, "
    "masks); or compile a smaller region that does not contain the branch or loop."
)

Op = tuple[str, str | None]


@dataclass(slots=True)
class Compilability:
    verdict: str
    """``good_candidate`` or ``diverges``."""
    op_counts: list[int]
    divergence: dict[str, object] | None = None
    likely_cause: str | None = None
    advice: str | None = None
    samples: int = 0


def _first_difference(a: list[Op], b: list[Op]) -> int:
    for index, (left, right) in enumerate(zip(a, b, strict=False)):
        if left[0] != right[0]:
            return index
    return min(len(a), len(b))


def compare_op_sequences(sequences: list[list[Op]]) -> Compilability:
    """The verdict for the op sequences recorded on each sample input."""
    counts = [len(ops) for ops in sequences]
    reference = sequences[0]
    for sample, ops in enumerate(sequences[1:], start=1):
        if [op for op, _ in ops] == [op for op, _ in reference]:
            continue
        index = _first_difference(reference, ops)
        left = reference[index] if index < len(reference) else ("<end>", None)
        right = ops[index] if index < len(ops) else ("<end>", None)
        site = left[1] or right[1]
        if left[0] == "<end>" or right[0] == "<end>":
            cause = (
                f"the op sequences have different lengths ({len(reference)} vs {len(ops)}): a "
                "Python loop or container whose length depends on the input"
            )
        else:
            cause = (
                f"different ops at step {index} ({left[0]} vs {right[0]}): Python control flow "
                "that depends on tensor data or input values"
            )
        return Compilability(
            verdict="diverges",
            op_counts=counts,
            divergence={"sample": sample, "step": index, "ops": [left[0], right[0]], "site": site},
            likely_cause=cause,
            advice=ADVICE,
            samples=len(sequences),
        )
    return Compilability(verdict="good_candidate", op_counts=counts, samples=len(sequences))
