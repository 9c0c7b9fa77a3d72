"""Why a graph is as big as it is: its ops by user line, a line that a Python loop unrolled
into most of the graph, and graphs of thousands of tiny ops over many small inputs.

Compile time follows the length of what Dynamo traced, not the size of the program: a loop of
300 steps in ``forward`` is 300 copies of its body in one graph (the issue's 300-step loop:
1,201 ops, 19.2 s to compile, 13.1 s of it codegen, on 2 CPU cores).
"""

from __future__ import annotations

from typing import NamedTuple

from pt2doctor.analysis.findings.model import Finding, Subject
from pt2doctor.analysis.paths import library_path, short_library_path
from pt2doctor.analysis.recompiles.ledger import RESUME_NAME, CompileEntry, Ledger
from pt2doctor.analysis.source_lines import class_of_line
from pt2doctor.trace.built import GraphLine, OutputGraph

# A line is "unrolled" when it repeats at least this often and holds this share of the ops.
UNROLL_MIN_REPEATS = 8
UNROLL_MIN_SHARE = 0.3
# A graph of many small inputs: at least this many inputs, this many ops, this small a median.
SMALL_INPUTS_MIN = 200
SMALL_INPUTS_MIN_OPS = 1000
SMALL_INPUT_NUMEL = 4096
_MANY_OPS = 200  # an unrolled loop this large (or compiling this long) is a warning
_SLOW_COMPILE_S = 10.0


class GraphSize(NamedTuple):
    ops: int
    """The graph's op count (compilation_metrics' when it has one)."""
    by_line: list[GraphLine]
    """Its user lines, the ones holding the most ops first."""


def _graph(entry: CompileEntry) -> tuple[OutputGraph, int] | None:
    """The compile's printed Dynamo graph and its op count (compilation_metrics' when it has
    one and it covers the printed lines), None when the trace has no printed graph."""
    built = entry.record.built
    if built is None or built.graph is None:
        return None
    graph = built.graph
    # compilation_metrics counts calls only; the printed graph's lines also hold attribute
    # reads (an optimizer's param_groups): never a total below what the lines hold.
    return graph, max(entry.record.graph_op_count or 0, sum(line.ops for line in graph.lines))


def graph_size(entry: CompileEntry) -> GraphSize | None:
    """One compile's Dynamo graph: its ops, by user line (None when the trace has no printed
    graph)."""
    found = _graph(entry)
    if found is None:
        return None
    graph, total = found
    return GraphSize(total, sorted(graph.lines, key=lambda line: -line.ops))


def _repeats(line: GraphLine) -> int:
    return max(line.groups, line.period)


def _loop_lines(lines: list[GraphLine], total: int) -> list[list[GraphLine]]:
    """Lines that a loop unrolled, grouped by function and repetition count (a loop body of
    several lines repeats each of them as often), the groups with a large share only."""
    groups: dict[tuple[str, str, int], list[GraphLine]] = {}
    for line in lines:
        if _repeats(line) >= UNROLL_MIN_REPEATS:
            groups.setdefault((line.file, line.function, _repeats(line)), []).append(line)
    return [g for g in groups.values() if sum(x.ops for x in g) >= UNROLL_MIN_SHARE * total]


def unrolled_loop_findings(ledger: Ledger) -> list[Finding]:
    """One finding per unrolled loop: the variants of a frame that recompiled (a routing
    loop whose indices are guarded: 8 graphs) each hold the same loop, and the first
    graph's finding names the others (``facts["also_in_graphs"]``), not one finding each."""
    found: list[tuple[Finding, range, list[tuple[str, int]]]] = []
    for entry in ledger.compiles:
        graph_ops = _graph(entry)
        if graph_ops is None:
            continue
        graph, total = graph_ops
        for group in _loop_lines(graph.lines, total):
            if _per_module_calls(group):
                continue
            finding = _unrolled(entry, group, total, graph.weights)
            lines = range(min(line.line for line in group), max(line.line for line in group) + 1)
            # The same loop in another variant, even where it kept other lines of its body (an
            # optimizer's first step has lines its later steps skip): one finding.
            same = next((item for item in found if _same_loop(item[0], item[1], finding, lines)),
                        None)  # fmt: skip
            if same is not None:
                same[2].append((entry.compile_id, total))
            else:
                found.append((finding, lines, []))
    return [_also_in(finding, others) for finding, _, others in found]


def _same_loop(known: Finding, known_lines: range, new: Finding, new_lines: range) -> bool:
    """Two findings of one loop: the same code, file and function, and lines that overlap."""
    return (
        known.code == new.code
        and known.subject.file == new.subject.file
        and known.subject.function == new.subject.function
        and max(known_lines.start, new_lines.start) < min(known_lines.stop, new_lines.stop)
    )


def _also_in(finding: Finding, others: list[tuple[str, int]]) -> Finding:
    if not others:
        return finding
    ids = [compile_id for compile_id, _ in others]
    low, high = min(ops for _, ops in others), max(ops for _, ops in others)
    ops = f"{low} ops" if low == high else f"{low}–{high} ops"
    shown = ", ".join(ids) if len(ids) <= 4 else f"{ids[0]}–{ids[-1]}"
    more = f"{len(ids)} more graph" + ("s" if len(ids) > 1 else "")
    finding.evidence.append(f"the same lines in {more}: {shown} ({ops} each)")
    finding.facts = {**finding.facts, "also_in_graphs": " ".join(ids)}
    return finding


def _per_module_calls(group: list[GraphLine]) -> bool:
    """Lines that read no weights, each copy run after another module's (a rotary embedding
    every attention layer calls for q and k): the layer stack calling one function, not a
    loop. One loop in one module runs its copies in one module's context."""
    if any(line.owners for line in group):
        return False
    repeats = _repeats(group[0])
    return max(len(line.contexts - {""}) for line in group) * 2 >= repeats


def _weight_shapes(group: list[GraphLine], weights: tuple[tuple[str, str], ...]) -> int:
    """How many different weight shapes the copies of ``group`` have: for each line, its
    copies' modules (``owners``) by the shapes of their parameters and buffers (the graph's
    inputs), the most of any line (0: the graph does not say)."""
    most = 0
    for line in group:
        shapes = {
            tuple(sorted(shape for name, shape in weights
                         if name.startswith((f"{owner}_parameters_", f"{owner}_buffers_"))))
            for owner in line.owners
        }  # fmt: skip
        shapes.discard(())
        most = max(most, len(shapes))
    return most


def _unrolled(
    entry: CompileEntry,
    group: list[GraphLine],
    total: int,
    weights: tuple[tuple[str, str], ...] = (),
) -> Finding:
    ops, repeats = sum(line.ops for line in group), _repeats(group[0])
    first, last = min(line.line for line in group), max(line.line for line in group)
    where = f"line {first}" if first == last else f"lines {first}-{last}"
    head = min(group, key=lambda line: line.line)  # the code quoted is the line named
    code = head.code if len(group) == 1 else f"{head.code} ..."
    seconds = entry.record.compile_time_s
    cost = "" if seconds is None else f", compiled in {seconds:.1f} s"
    codegen = entry.phases.get("inductor_codegen", 0.0) + entry.phases.get("cpp_triton_build", 0.0)
    if seconds is not None and codegen:
        cost += f" ({codegen:.1f} s of it Inductor codegen and kernel build)"
    big = ops >= _MANY_OPS or (seconds or 0) >= _SLOW_COMPILE_S
    evidence = [f"{head.file}:{first}: {code}", f"graph {entry.compile_id}: {total} ops{cost}"]
    share = f"{ops} of the graph's {total} ops ({ops / total:.0%})"
    subject = Subject("lines", group[0].function, group[0].file, first, group[0].function)
    if max(len(line.owners) for line in group) >= repeats:  # each copy on its own weights
        title = (
            f"{where} of {group[0].function} ({group[0].file}) run {repeats} times in one "
            f"graph, once per module that calls them: {share}"
        )
        shapes = _weight_shapes(group, weights)
        if shapes > 1:
            evidence.append(f"the {repeats} copies' weights come in {shapes} shapes")
        advice = _repeated_advice(group[0].file, class_of_line(group[0].file, first), repeats,
                                  shapes)  # fmt: skip
        # Regional compilation pays off on many ops; a small graph that compiled slowly (a
        # loaded machine) is no reason to restructure the program. Nor does it where most
        # copies have weights of their own shape: each shape is a graph of its own.
        many = ops >= _MANY_OPS and 2 * shapes <= repeats
        return Finding(
            "warning" if many else "info", "repeated_blocks", title, advice, evidence, subject
        )
    title = (
        f"{where} of {group[0].function} ({group[0].file}) unrolled {repeats} times into {share}"
    )
    if "/torch/optim/" in group[0].file:
        # torch's own loop: the user's code that steps the optimizer is where to act.
        stepped = _stepped_at(entry)
        if stepped is not None:
            loop = f"{short_library_path(group[0].file)}:{first}"
            title = (f"The optimizer's per-parameter loop ({group[0].function}, {loop}) "
                     f"unrolled {repeats} times into {share}, stepped {stepped[0]}")  # fmt: skip
            evidence[0] = f"{loop}: {code}"
            subject = stepped[1]
    return Finding(
        "warning" if big else "info",
        "unrolled_loop",
        title,
        _unrolled_advice(group[0].file, repeats),
        evidence,
        subject,
    )


def _stepped_at(entry: CompileEntry) -> tuple[str, Subject] | None:
    """Where the user's code steps the optimizer whose loop a graph unrolled: the line that
    called the optimizer's own compiled frame (``opt.step()`` at train.py:49), or the user's
    compiled function whose graph holds the step. None when neither is the user's."""
    record = entry.record
    if record.file and library_path(record.file) is None and "/torch/" not in record.file:
        function = record.function or entry.function or "?"
        return (f"inside {function} ({record.file}:{record.line})",
                Subject("lines", function, record.file, record.line, function))  # fmt: skip
    caller = record.call_site
    if caller is None or not caller.file:
        return None
    resumed = RESUME_NAME.match(caller.function or "")
    name = str(resumed[1]) if resumed else caller.function
    code = f" (`{caller.code.strip()}`)" if caller.code else ""
    return (f"at {caller.file}:{caller.line}{code}",
            Subject("lines", name, caller.file, caller.line, name))  # fmt: skip


def _repeated_advice(file: str, block: str | None = None, copies: int = 0, shapes: int = 0) -> str:
    """The same module code, run by many modules (a layer stack, a UNet's attention blocks):
    Dynamo inlines each call, so the graph holds a copy per module. Regional compilation
    compiles the block once (tests/programs/real/unet_denoise.py: 8 copies of the attention
    processor in one graph; 4 in all with compile_repeated_blocks). ``block``: the class whose
    method holds the repeated code, read from its file."""
    cls = block or "BlockClass"
    module = _module_of(file) if block else None
    how = (
        "model.compile_repeated_blocks() where the model lists the block's class in its "
        "`_repeated_blocks` (UNet2DConditionModel lists BasicTransformerBlock; it raises for a "
        "model that lists none, UNet2DModel), else `.compile()` on each module of that class "
        f"(`for m in model.modules(): if isinstance(m, {cls}): m.compile()`"
        + (f", with `from {module} import {cls}`" if module else "")
        + ")"
        if "diffusers/" in file
        else "for block in model.layers: block.compile() (the ModuleList that holds the "
        "repeated blocks)"
    )
    slower = ("the step can get slower (a graph per block: no fusion across blocks, a call "
              "and its guards each), so measure both before keeping it")  # fmt: skip
    inlined = ("Dynamo inlines every module call, so this graph holds one copy of that code per "
               "module that runs it, and compile time grows with the copies.")  # fmt: skip
    if 2 * shapes > copies:
        return (
            f"{inlined} Here the {copies} copies have {shapes} different weight shapes, and "
            "regional compilation shares a graph only between blocks of one shape: it would "
            f"compile {shapes} graphs or more (more where the input sizes differ too), so it "
            "is unlikely to shorten the compile, and " + slower + f". If it is wanted: {how}."
        )
    # (Fewer shapes than half the copies: a block that holds several of them, as a UNet's
    # transformer block holds its self- and cross-attention, may have fewer still.)
    return (
        f"{inlined} Compile the repeated block instead of the whole model (regional "
        f"compilation): {how}. Blocks of one class and shape then share one compiled graph. "
        "It shortens the compile; " + slower + "."
    )


def _module_of(file: str) -> str | None:
    """``diffusers.models.resnet`` of ``.../site-packages/diffusers/models/resnet.py``."""
    if "site-packages/" not in file or not file.endswith(".py"):
        return None
    tail = file.split("site-packages/", 1)[1]
    return tail.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _unrolled_advice(file: str, repeats: int) -> str:
    if "/torch/optim/" in file:
        return (
            f"The optimizer's per-parameter loop runs {repeats} times inside the compiled step: "
            "construct the optimizer with foreach=True (or fused=True where supported), so one "
            "op covers every parameter."
        )
    lead = (
        "The loop is in library code your call leads into; "
        if library_path(file) is not None
        else ""
    )
    return (
        f"{lead}Dynamo traces a Python loop by unrolling it, so compile time grows with the "
        f"{repeats} iterations. Batch the iterations (broadcasting, torch.vmap, or a cumulative "
        "op such as torch.cumsum), or move the loop out of the compiled function and compile "
        "its body, passing what changes per step as a tensor (`gains[i]`, not `i`): then one "
        "graph serves every iteration."
    )


def _compile_subject(entry: CompileEntry) -> Subject:
    record = entry.record
    return Subject(
        "compile", entry.function, record.file, record.line, entry.function,
        stream=record.stream, compile_id=entry.compile_id,
    )  # fmt: skip


def many_small_inputs_findings(ledger: Ledger) -> list[Finding]:
    findings = []
    for entry in ledger.compiles:
        found = _graph(entry)
        if found is None or len(found[0].inputs) < SMALL_INPUTS_MIN:
            continue
        graph, ops = found
        sizes = [n for n in graph.inputs if n is not None]
        if ops < SMALL_INPUTS_MIN_OPS or not sizes:
            continue
        import statistics  # ~3 ms to import: only for a graph of that many inputs

        median = statistics.median(sizes)
        if median > SMALL_INPUT_NUMEL:
            continue
        findings.append(
            Finding(
                "warning",
                "many_small_inputs",
                f"compile {entry.compile_id} traced {ops} ops over {len(graph.inputs)} inputs "
                f"of {median:g} elements (median)",
                "Compile time follows the op count, not the data: a per-tensor loop over many "
                "small tensors (an optimizer without foreach, per-parameter clipping) makes "
                "thousands of tiny ops. Use the foreach/fused variant (torch.optim's "
                "foreach=True, torch._foreach_* ops), or keep the small tensors in one flat "
                "buffer.",
                [f"compile {entry.compile_id}: {ops} ops, {len(graph.inputs)} inputs"],
                _compile_subject(entry),
            )
        )
    return findings
