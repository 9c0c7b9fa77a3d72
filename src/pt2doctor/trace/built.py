"""What the compiler built, as the trace records it: the Dynamo graph's ops per user line, the
launches of Inductor's output code, and Inductor's provenance artifacts.

Facts only, parsed from four payloads (each optional, each tolerant):

- ``dynamo_output_graph``: nodes grouped under ``# File: PATH:LINE in FN, code: ...``
  comments; the ``forward`` signature gives the graph's inputs with their shapes.
- ``inductor_output_code``: the ``call`` function's launches: generated kernels
  (``cpp_fused_*``, ``triton_*``), library calls (``extern_kernels.*``), ATen fallbacks
  (``torch.ops.aten.X.default``) and ``.item()`` syncs, each with the ``Topologically Sorted
  Source Nodes`` / ``Original ATen`` comment and provenance debug handle above it.
- ``inductor_provenance_tracking_node_mappings`` (``cppCodeToPost``: kernel -> post-grad
  nodes) and ``inductor_provenance_tracking_kernel_stack_traces`` (kernel -> the user's
  ``File ..., line N`` frames), written with ``INDUCTOR_PROVENANCE=1``; older logs name the
  first one ``inductor_triton_kernel_to_post_grad_nodes``.
"""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple

import orjson

_FILE_COMMENT = re.compile(
    r"^\s*# File: (?P<file>.+?):(?P<line>\d+) in (?P<fn>[^,]+), code: (?P<code>.*)$"
)
# A node line of a printed FX graph: ``name: "f32[8]cpu" = target(args)`` or ``name = ...``.
_NODE = re.compile(r"^\s+(?P<name>[A-Za-z_]\w*)(?:: \"[^\"]*\")? = (?P<rhs>.+)$")
_OWNER = re.compile(r"\b[lL]_\w*?(?=_(?:parameters|buffers)_)")
_SIGNATURE = re.compile(r"^\s*def forward\(self, (?P<args>.*)\):\s*$")
_ARG_SHAPE = re.compile(r"(?P<name>\w+): \"[a-z]+\d*\[(?P<shape>[^\]]*)\]")
_STACK_FRAME = re.compile(
    r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>[^\n]+)\n(?P<code>[^\n]*)'
)
_TARGET = re.compile(r"^(?:torch\.ops\.)?(?P<target>[\w.]+?)(?:\(|$)")


KernelKind = Literal["generated", "library", "fallback", "sync"]


class GraphLine(NamedTuple):
    """One user line of a Dynamo graph and the ops it put there."""

    file: str
    line: int
    function: str
    code: str
    ops: int
    groups: int
    """How many separate ``# File:`` groups the line has: a loop body of several lines
    alternates between them once per iteration."""
    period: int
    """How often the line's op sequence repeats back to back (1: no repetition): a one-line
    loop body unrolled N times is N copies of one op pattern under one comment."""
    owners: frozenset[str] = frozenset()
    """The modules whose parameters or buffers the line's ops read (``l_self_modules_layers_
    modules_0``): one per copy when the same code runs in several modules (a layer stack),
    one for a Python loop over one module's weights."""
    contexts: frozenset[str] = frozenset()
    """For each of the line's groups, the module whose weights the graph read last before it:
    a weightless function called from each layer (rotary embeddings) has one per layer, a
    Python loop in one module one."""


class OutputGraph(NamedTuple):
    """The Dynamo graph of one compile: its ops by user line, which line each node came from,
    and the numel of each input (None where the shape is symbolic)."""

    lines: list[GraphLine]
    node_lines: dict[str, int]
    """Node name -> index into ``lines`` (to join Inductor's ``Source Nodes`` to a line)."""
    inputs: list[int | None]
    weights: tuple[tuple[str, str], ...] = ()
    """The graph's parameter and buffer inputs: (the name its nodes read, as in ``owners``
    (``l_self_modules_layers_modules_0_parameters_weight_``), its shape (``32, 3, 3, 3``))."""


class Launch(NamedTuple):
    """One launch in the ``call`` function of Inductor's output code."""

    name: str
    """``cpp_fused_gelu_1``, ``extern_kernels.addmm``, ``torch.ops.aten.cumsum.default``,
    ``buf3.item()``."""
    kind: KernelKind
    handle: str | None
    """The provenance key (``cpp_fused_gelu_1:3``) when the code carries debug handles."""
    source_nodes: tuple[str, ...]
    aten: tuple[str, ...]


class OutputCode(NamedTuple):
    graph: str
    """``inference``, ``forward`` or ``backward`` (from ``# AOT ID``), else ``graph``."""
    launches: list[Launch]


def _period(kinds: list[str]) -> int:
    """The number of back-to-back copies of the shortest pattern that makes up ``kinds``."""
    count = len(kinds)
    for size in range(1, count // 2 + 1):
        if count % size == 0 and kinds == kinds[:size] * (count // size):
            return count // size
    return 1


def _op_kind(rhs: str) -> str:
    """The callee of a node (``torch.sin``, ``l_self_parameters_gains_[``, ``+``), enough to
    tell one op pattern from another; its arguments (indices, names) are left out."""
    if "[" in rhs.split("(", 1)[0]:
        return "getitem"
    match = _TARGET.match(rhs)
    if match and "(" in rhs:
        return match.group("target")
    for operator in (" + ", " - ", " * ", " / ", " @ ", " ** ", " // ", " % "):
        if operator in rhs:
            return operator.strip()
    return rhs.split(" ", 1)[0][:40]


def parse_output_graph(payload: str) -> OutputGraph:
    """The ops per user line of a printed Dynamo graph (``dynamo_output_graph``)."""
    order: list[tuple[str, int, str, str]] = []
    kinds: dict[tuple[str, int, str, str], list[str]] = {}
    groups: dict[tuple[str, int, str, str], int] = {}
    node_lines: dict[str, tuple[str, int, str, str]] = {}
    owners: dict[tuple[str, int, str, str], set[str]] = {}
    contexts: dict[tuple[str, int, str, str], set[str]] = {}
    inputs: list[int | None] = []
    weights: tuple[tuple[str, str], ...] = ()
    current: tuple[str, int, str, str] | None = None
    last_owner = ""
    for text in payload.splitlines():
        if (comment := _FILE_COMMENT.match(text)) is not None:
            current = (comment["file"], int(comment["line"]), comment["fn"], comment["code"])
            if current not in kinds:
                order.append(current)
                kinds[current] = []
            groups[current] = groups.get(current, 0) + 1
            contexts.setdefault(current, set()).add(last_owner)
        elif current is not None and (node := _NODE.match(text)) is not None:
            kinds[current].append(_op_kind(node["rhs"]))
            node_lines[node["name"]] = current
            read = _OWNER.findall(node["rhs"].split(";")[0])
            owners.setdefault(current, set()).update(read)
            last_owner = read[-1] if read else last_owner
        elif current is None and (signature := _SIGNATURE.match(text)) is not None:
            found = list(_ARG_SHAPE.finditer(signature["args"]))
            inputs = [_numel(m["shape"]) for m in found]
            weights = tuple(("l" + m["name"][1:], m["shape"]) for m in found
                            if "_parameters_" in m["name"] or "_buffers_" in m["name"])  # fmt: skip
    kept = [key for key in order if kinds[key]]
    position = {key: at for at, key in enumerate(kept)}
    lines = [
        GraphLine(
            *key,
            ops=len(kinds[key]),
            groups=groups[key],
            period=_period(kinds[key]),
            owners=frozenset(owners.get(key, ())),
            contexts=frozenset(contexts.get(key, ())),
        )
        for key in kept
    ]
    return OutputGraph(
        lines, {name: position[key] for name, key in node_lines.items()}, inputs, weights
    )


def _numel(shape: str) -> int | None:
    numel = 1
    for size in (part.strip() for part in shape.split(",") if part.strip()):
        if not size.isdigit():
            return None
        numel *= int(size)
    return numel


# The lines of the output code that matter, found by one scan of the Python around the kernels'
# sources (those are most of the payload).
_CODE_LINES = re.compile(
    r"^(?:# AOT ID: \['\d+_(?P<graph>\w+)'\]"
    r"|[ \t]*# Topologically Sorted Source Nodes: \[(?P<nodes>[^\]\n]*)\], Original ATen: \[(?P<aten>[^\]\n]*)\]"
    r"|[ \t]*# \[Provenance debug handles\] (?P<key>\S+)"
    r"|(?P<defined>(?:cpp|triton)_\w+) = async_compile\."
    r"|[ \t]+(?P<generated>(?:cpp|triton)_\w+)(?:\.run)?\("
    r"|[ \t]+(?:\w+ = )?extern_kernels\.(?P<library>\w+)\("
    r"|[ \t]+(?:[\w, ]+ = )?torch\.ops\.(?P<fallback>\w+\.\w+\.\w+)\("
    r"|[ \t]+\w+ = (?P<sync>\w+)\.item\(\))",
    re.M,
)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_output_code(payload: str) -> OutputCode:
    """The launches of Inductor's ``call`` function, in order, each with the comments above it
    (a Triton kernel's comment sits above its definition: it is kept for its launches)."""
    graph, launches = "graph", []
    nodes: tuple[str, ...] = ()
    aten: tuple[str, ...] = ()
    handle: str | None = None
    defined: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    # The kernels' own sources sit in r'''...''' strings: only what is outside them is Python.
    python = "\n".join(payload.split("'''")[0::2])
    for match in _CODE_LINES.finditer(python):
        group = match.lastgroup
        if group == "graph":
            graph = match["graph"] if graph == "graph" else graph
        elif group == "aten":
            nodes, aten = _names(match["nodes"]), _names(match["aten"])
        elif group == "key":
            handle = match["key"]
        elif group == "defined":
            defined[match["defined"]] = (nodes, aten)
            nodes, aten, handle = (), (), None
        elif group is not None:
            launch = _launch(group, match[group], handle, nodes, aten)
            if launch.kind == "generated" and not launch.source_nodes:
                nodes, aten = defined.get(launch.name, ((), ()))
                launch = launch._replace(source_nodes=nodes, aten=aten)
            launches.append(launch)
            nodes, aten, handle = (), (), None
    return OutputCode(graph, launches)


def _launch(
    group: str, found: str, handle: str | None, nodes: tuple[str, ...], aten: tuple[str, ...]
) -> Launch:
    name = {
        "library": f"extern_kernels.{found}",
        "fallback": f"torch.ops.{found}",
        "sync": f"{found}.item()",
    }.get(group, found)
    return Launch(name, kernel_kind(name), handle, nodes, aten)


# ATen ops Inductor calls as they are by design, as it calls extern_kernels: attention, matmul,
# convolution and their CPU (mkldnn/onednn) variants. Any other ``torch.ops`` call in the output
# code is an op with no Inductor lowering here (a fallback).
_LIBRARY_OPS = re.compile(
    r"^torch\.ops\.(?:mkldnn|onednn|quantized)\."
    r"|^torch\.ops\.aten\.(?:_scaled_dot_product\w*|_flash_attention\w*|_efficient_attention\w*"
    r"|_cudnn\w*|cudnn\w*|miopen\w*|mkldnn\w*|convolution\w*|_convolution\w*|mm|bmm|addmm"
    r"|baddbmm|addbmm|_addmm_activation|_int_mm|_weight_int\w*|_scaled_mm)\."
)


def kernel_kind(name: str) -> KernelKind:
    """``generated`` (cpp_fused_*, triton_*), ``library`` (extern_kernels.*, aoti_torch_*, the
    ATen ops Inductor calls by design), ``fallback`` (any other ATen op: no lowering here),
    ``sync`` (``.item()``)."""
    if name.startswith(("extern_kernels.", "aoti_torch_")) or _LIBRARY_OPS.match(name):
        return "library"
    if name.startswith("torch.ops."):
        return "fallback"
    if name.endswith(".item()"):
        return "sync"
    return "generated"


def _json_object(payload: str | None) -> dict[str, Any]:
    try:
        decoded = orjson.loads(payload or "")
    except orjson.JSONDecodeError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def parse_kernel_nodes(payload: str | None) -> dict[str, list[str]]:
    """``cppCodeToPost`` of the node mappings (or the whole of the older
    ``inductor_triton_kernel_to_post_grad_nodes``): kernel key -> post-grad node names."""
    decoded = _json_object(payload)
    table = decoded.get("cppCodeToPost", decoded if "preToPost" not in decoded else {})
    if not isinstance(table, dict):
        return {}
    return {str(k): [str(n) for n in v] for k, v in table.items() if isinstance(v, list)}


def parse_post_to_pre(payload: str | None) -> dict[str, list[str]]:
    """``postToPre`` of the node mappings: post-grad node -> the Dynamo graph's nodes."""
    table = _json_object(payload).get("postToPre")
    if not isinstance(table, dict):
        return {}
    return {str(k): [str(n) for n in v] for k, v in table.items() if isinstance(v, list)}


def parse_kernel_frames(payload: str | None) -> dict[str, list[tuple[str, int, str, str]]]:
    """kernel key -> ``(file, line, function, code)`` of the innermost frame of each of its
    stack traces: the line that made one of the kernel's ops (a trace lists the whole stack,
    outermost first, and a fused kernel has one trace per line it took ops from)."""
    found: dict[str, list[tuple[str, int, str, str]]] = {}
    for key, traces in _json_object(payload).items():
        if not isinstance(traces, list):
            continue
        frames = found.setdefault(str(key), [])
        for trace in traces:
            innermost = None
            for m in _STACK_FRAME.finditer(str(trace)):
                innermost = m
            if innermost is not None:
                frames.append(
                    (
                        innermost["file"],
                        int(innermost["line"]),
                        innermost["fn"].strip(),
                        innermost["code"].strip(),
                    )
                )
    return found
