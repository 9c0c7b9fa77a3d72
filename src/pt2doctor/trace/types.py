"""The typed model of a traced run: what the trace says happened, before any judgement.

The trace collector fills these from log records; analyses (``pt2doctor.analysis``) read them
and never look at the log again. Everything is plain data so a unit test can build a Run by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from pt2doctor.trace.records import CompileId, ParseStats

if TYPE_CHECKING:
    from pt2doctor.trace.built import OutputCode, OutputGraph
    from pt2doctor.trace.fusion_log import Scheduling


class SourceLine(NamedTuple):
    """A line of user code: file, line number, function and (when logged) the code itself.

    NamedTuples (here and :class:`Guard`) rather than frozen dataclasses: the same immutable,
    hashable values, created at import in a fraction of the time."""

    file: str | None
    line: int | None
    function: str | None
    code: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function, "code": self.code}

    @property
    def statement(self) -> str:
        """The code without its trailing comment, stripped: what a quote of the line shows (a
        comment's backticks would break the quote); '' when the code is not logged."""
        return (self.code or "").split("  #")[0].strip()

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}"
        if self.function:
            where += f" in {self.function}"
        return f"{where}: {self.code}" if self.code else where


class InductorGraph:
    """One graph Inductor compiled (a compile's forward and backward are two): its output code
    and its provenance artifacts, which torch writes right after that code. The provenance
    keys (``cpp_fused_gelu_1:3``) are numbered per graph: a backward starts at 1 again."""

    __slots__ = ("artifacts", "code", "kernel_frames", "kernel_nodes", "post_to_pre")

    def __init__(self, code: OutputCode | None = None) -> None:
        self.code = code
        self.kernel_nodes: dict[str, list[str]] = {}
        """Provenance: kernel key -> post-grad nodes (``cppCodeToPost``)."""
        self.post_to_pre: dict[str, list[str]] = {}
        """Provenance: post-grad node -> the Dynamo graph's nodes it came from."""
        self.kernel_frames: dict[str, list[tuple[str, int, str, str]]] = {}
        """Provenance: kernel key -> the innermost user frame of each of its stack traces."""
        self.artifacts: set[str] = set()
        """The provenance artifacts this graph got (the next one of a name starts a graph)."""


class Built:
    """What the trace says the compiler built for one compile (trace/built.py parses it): the
    Dynamo graph and each Inductor graph, in log order."""

    __slots__ = ("graph", "inductor_graphs")

    def __init__(self) -> None:
        self.graph: OutputGraph | None = None
        self.inductor_graphs: list[InductorGraph] = []


@dataclass(slots=True)
class GraphBreakEvent:
    """One graph break as Dynamo logged it, in one compile."""

    compile_id: str
    site: SourceLine | None
    """The innermost user frame where tracing stopped."""
    gb_type: str
    """Dynamo's short name of the break (``Unsupported Tensor.item() call ...``)."""
    reason: str
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    user_stack: list[SourceLine] = field(default_factory=list)
    gb_id: str | None = None
    """The break's id in the graph-break site (``gb0124``) where torch gives one."""


class Guard(NamedTuple):
    """One leaf guard of a compiled variant, from ``dynamo_cpp_guards_str``."""

    source: str
    """What it guards (``L['x']``), from the enclosing guard manager; empty for root guards."""
    kind: str
    """The guard type (``TENSOR_MATCH``, ``EQUALS_MATCH``, ``LAMBDA_GUARD`` ...)."""
    code: str
    user_line: str | None = None
    """The user code that installed the guard, as Dynamo noted it after ``#``."""


@dataclass(slots=True)
class CacheEvent:
    """One cache lookup of a compile, from its ``<cache>_cache_{hit,miss,bypass}`` artifact."""

    cache: str
    """``fx_graph``, ``aotautograd`` or ``triton_autotune`` (per-kernel autotune cache)."""
    status: str
    """``hit``, ``miss`` or ``bypass``."""
    key: str | None = None
    bypass_reason: str | None = None
    detail: str | None = None
    """Torch's finer status (``cache_status_detailed``: ``full_miss``, ``hit`` ...)."""
    components: tuple[tuple[str, str], ...] = ()
    """The key's components as (name, hash) pairs, where torch logs them (FX graph cache)."""
    seconds: float | None = None
    """What the entry cost to build (a miss) or saved (a hit), as torch measured it."""


class CompileRecord:
    """Everything the trace says about one Dynamo compile (a frame id / frame compile id).

    A plain class with slots rather than a dataclass: with thirty fields, making the dataclass
    took ~3 ms of every ``pt2doctor report`` start."""

    __slots__ = (
        "attempts",
        "built",
        "cache",
        "cache_events",
        "call_site",
        "caller",
        "compile_id",
        "compile_time_s",
        "counters",
        "cudagraph_skip_reason",
        "dynamo_error",
        "fail_reason",
        "fail_type",
        "fail_user_frame",
        "file",
        "first_arg_type",
        "function",
        "graph_breaks",
        "graph_count",
        "graph_op_count",
        "guards",
        "has_guarded_code",
        "has_metrics",
        "hf_cache_class",
        "line",
        "raised_in",
        "rank",
        "recompile_reasons",
        "restart_reasons",
        "self_type",
        "specialization_stacks",
        "specializations",
        "start_time",
        "stream",
        "symbols",
        "timings",
    )

    compile_id: CompileId
    stream: str
    rank: int | None
    function: str | None
    file: str | None
    line: int | None
    caller: SourceLine | None
    """The frame that called the compiled one (``dynamo_start``'s stack, one up)."""
    call_site: SourceLine | None
    """The innermost line of the user's own code on the way to the compiled frame
    (``out = model(input_ids=ids)``): where a fix that marks an input is written."""
    self_type: str | None
    """The class of the frame's ``self`` (``pkg.mod.Cls``), from the guard tree."""
    first_arg_type: str | None
    """The class of ``args[0]`` for a frame taking ``*args`` (a generic decorator's wrapper
    called as a bound method gets ``self`` there), from the guard tree."""
    attempts: int
    built: Built | None
    """What the compiler built (graph ops by line, output code launches, provenance), when the
    trace has the payloads: None for a compile with none of them."""
    start_time: float | None
    compile_time_s: float | None
    timings: dict[str, float]
    """Raw timers in seconds: ``total``, ``backend``, ``inductor``, ``codegen`` (nested in that
    order), ``cpp_build``, ``triton_build``; from compilation_metrics, else chromium events."""
    graph_op_count: int | None
    graph_count: int
    """How many FX graphs Dynamo produced for this compile (0: the frame ran eagerly)."""
    has_guarded_code: bool | None
    fail_type: str | None
    fail_reason: str | None
    fail_user_frame: SourceLine | None
    cudagraph_skip_reason: str | None
    """Why Inductor did not use CUDA graphs for this compile (``mode="reduce-overhead"``:
    dynamic shapes, a CPU op, a mutated input), from compilation_metrics."""
    restart_reasons: list[str]
    recompile_reasons: list[str]
    """Dynamo's guard-failure text, one entry per earlier variant (``0/1: ...``)."""
    guards: list[Guard] | None
    cache: dict[str, str]
    """Cache outcome per cache: ``{"fx_graph": "hit", "aotautograd": "miss"}``."""
    cache_events: list[CacheEvent]
    """Every cache lookup with its key, components and bypass reason, in log order."""
    counters: dict[str, float]
    """compilation_metrics counters: ``guard_latency_us``, ``guard_count``, ``cache_size``,
    and every per-phase ``*_us`` timer torch logs (raw, microseconds)."""
    symbols: dict[str, tuple[str, str]]
    """Dynamic symbols created: symbol -> (source, value at creation)."""
    specializations: list[str]
    graph_breaks: list[GraphBreakEvent]
    dynamo_error: str | None
    raised_in: SourceLine | None
    """The innermost frame of the user's code in the compile error's traceback (a user
    compiler pass, a custom op's kernel), from the ``dynamo_error`` artifact."""
    has_metrics: bool

    def __init__(
        self,
        compile_id: CompileId,
        stream: str,
        rank: int | None = None,
        function: str | None = None,
        file: str | None = None,
        line: int | None = None,
        caller: SourceLine | None = None,
        self_type: str | None = None,
        call_site: SourceLine | None = None,
        attempts: int = 1,
        start_time: float | None = None,
        compile_time_s: float | None = None,
        timings: dict[str, float] | None = None,
        graph_op_count: int | None = None,
        graph_count: int = 0,
        has_guarded_code: bool | None = None,
        fail_type: str | None = None,
        fail_reason: str | None = None,
        fail_user_frame: SourceLine | None = None,
        restart_reasons: list[str] | None = None,
        recompile_reasons: list[str] | None = None,
        guards: list[Guard] | None = None,
        cache: dict[str, str] | None = None,
        cache_events: list[CacheEvent] | None = None,
        counters: dict[str, float] | None = None,
        symbols: dict[str, tuple[str, str]] | None = None,
        specializations: list[str] | None = None,
        graph_breaks: list[GraphBreakEvent] | None = None,
        dynamo_error: str | None = None,
        raised_in: SourceLine | None = None,
        has_metrics: bool = False,
        first_arg_type: str | None = None,
    ) -> None:
        self.compile_id = compile_id
        self.stream = stream
        self.rank = rank
        self.function = function
        self.file = file
        self.line = line
        self.caller = caller
        self.call_site = call_site
        self.self_type = self_type
        self.first_arg_type = first_arg_type
        self.attempts = attempts
        self.start_time = start_time
        self.compile_time_s = compile_time_s
        self.timings = {} if timings is None else timings
        self.graph_op_count = graph_op_count
        self.graph_count = graph_count
        self.has_guarded_code = has_guarded_code
        self.fail_type = fail_type
        self.fail_reason = fail_reason
        self.fail_user_frame = fail_user_frame
        self.cudagraph_skip_reason: str | None = None
        self.restart_reasons = [] if restart_reasons is None else restart_reasons
        self.recompile_reasons = [] if recompile_reasons is None else recompile_reasons
        self.guards = guards
        self.cache = {} if cache is None else cache
        self.cache_events = [] if cache_events is None else cache_events
        self.counters = {} if counters is None else counters
        self.symbols = {} if symbols is None else symbols
        self.specializations = [] if specializations is None else specializations
        self.graph_breaks = [] if graph_breaks is None else graph_breaks
        self.dynamo_error = dynamo_error
        self.raised_in = raised_in
        self.has_metrics = has_metrics
        self.built = None
        self.hf_cache_class: str | None = None
        """The transformers KV-cache class the guards type (``StaticCache``), if any."""
        self.specialization_stacks: dict[str, list[SourceLine]] = {}
        """Each specialized source (``L['ids'].size()[1]``) -> the user stack where the shape
        env specialized it (``symbolic_shape_specialization``'s ``user_stack``, innermost last):
        the line that needed the concrete value (``if seq_len not in self._cache:``)."""

    def __repr__(self) -> str:
        return f"CompileRecord({str(self.compile_id)!r}, {self.stream!r}, {self.function!r})"


@dataclass(slots=True)
class StreamInfo:
    """One log file and the ranks it claims: its name's, and its envelopes' (records per rank)."""

    stream: str
    path: str
    name_rank: int | None
    envelope_ranks: dict[int, int] = field(default_factory=dict)


class Manifest(TypedDict, total=False):
    """A run directory's ``manifest.json`` (``pt2doctor run``, or ``watch``'s in-process run):
    written before the program starts (rundir/write.py) and completed when it ends. Every
    key is optional on read: a crash, an older pt2doctor or ``watch`` leaves some out. The
    settings keys (``backend_override`` ... ``collective_timeout_s``) come from the run
    options (capture/options.py ``manifest_settings``)."""

    format_version: int
    command: list[str]
    cwd: str
    start_time: float
    end_time: float | None
    exit_code: int | None
    signal: str | None
    stopped_by: str | None
    """``timeout`` or ``interrupted`` when pt2doctor stopped the program, else null."""
    returned: int
    """The exit code ``pt2doctor run`` returned."""
    backend_override: str | None
    timeout_s: float | None
    warmup_calls: int | None
    steady_after_s: float | None
    kernels: bool
    profile_calls: int | None
    collective_timeout_s: float | None
    launcher: dict[str, Any] | None
    host: dict[str, str]
    pt2doctor_version: str
    try_fix: dict[str, Any]
    """The fix a ``--try-fixes`` re-run applied (its FixApplication as JSON)."""
    environment: dict[str, Any]


@dataclass(slots=True)
class Run:
    """A traced run: its compiles in log order, the environment, and the parse health."""

    compiles: list[CompileRecord]
    parse_stats: ParseStats
    sources: list[str]
    streams: list[str]
    environment: dict[str, Any] = field(default_factory=dict)
    compile_id_count: int = 0
    """Distinct compile ids (restart attempts counted apart), as tlparse lists them."""
    manifest: Manifest | None = None
    """The run directory's manifest (``pt2doctor run``), None for a bare trace."""
    probes: ProbeData | None = None
    stream_info: list[StreamInfo] = field(default_factory=list)
    """Per log file: its stream, path and the ranks its name and envelopes give."""
    cache_component_values: dict[tuple[str, str], str] = field(default_factory=dict)
    """The value of each cache-key component: (name, hash) -> text (cut to 80 characters)."""
    aot_built: Built | None = None
    """What AOTInductor built (its wrapper code and provenance carry no compile id)."""
    export: ExportTrace | None = None
    """What an export logged (its guards, data-dependent expressions, the program); None when
    the log has no ``exported_program``."""
    fusion: dict[tuple[int | None, str], list[Scheduling]] | None = None
    """Inductor's fusion log (``run --kernels``) by (rank, compile id); None: none kept."""
    profile: ProfileCapture | None = None
    """The profiled window (``run --profile``); None: the run kept none."""
    tries: list[Try] = field(default_factory=list)
    """The re-runs ``run --try-fixes`` made, each with a fix applied (tries/index.json)."""
    tries_asked: bool = False
    """``run --try-fixes`` was given (tries/index.json exists, empty when nothing could be
    applied)."""
    stdout: str | None = None
    """What the program printed (the run directory's stdout.log, its first megabyte)."""


@dataclass(slots=True)
class Try:
    """One ``--try-fixes`` re-run: the trial it applied and its own run, loaded."""

    n: int
    trial: dict[str, Any]
    run: Run


@dataclass(slots=True)
class ShapeEvent:
    """One shape-environment event of an export (or a compile): a guard added, an expression
    that data-dependent code decided by the real values (``propagate_real_tensors``), an
    unbacked symbol created, a fake kernel missing or wrong."""

    kind: str
    """``guard_added``, ``data_dependent``, ``unbacked_symbol``, ``missing_fake_kernel`` or
    ``mismatched_fake_kernel``."""
    expr: str
    user_line: SourceLine | None
    result: str | None = None
    """What a data-dependent expression evaluated to (``False``)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Symbol -> the input it came from (``s0`` -> ``L['args'][0][0].size()[0]``)."""


@dataclass(slots=True)
class ExportTrace:
    """What an export log holds (``torch.export``: no Dynamo frame when non-strict)."""

    events: list[ShapeEvent] = field(default_factory=list)
    program: str | None = None
    """The ``exported_program`` record's text (``ExportedProgram: ...``)."""


@dataclass(slots=True)
class ProfileCapture:
    """What ``run --profile`` kept: the window's description and its Chrome trace."""

    window: dict[str, Any]
    """profile/window.json: hot_compile_id, calls, wall_s, closed_by, compiles_in_window."""
    trace: Any
    """The trace's events (trace/chrome.py ChromeTrace), None when it could not be read."""
    path: str
    error: str | None = None
    """Why the trace could not be read, or why there is no window."""


@dataclass(slots=True)
class ProbeData:
    """What the runtime probes of ``pt2doctor run`` measured (probes.jsonl, all processes)."""

    graph_calls: dict[str, int] = field(default_factory=dict)
    """Calls of each compiled graph, by compile id."""
    graph_seconds: dict[str, float] = field(default_factory=dict)
    graph_spread: dict[str, dict[int, int]] = field(default_factory=dict)
    """Calls of each compiled graph by duration bucket (trace/spread.py), by compile id."""
    break_hits: dict[tuple[str, str, int], int] = field(default_factory=dict)
    """Executions of each graph break: (file, function, line) of the break's resume point."""
    compiled: dict[str, dict[str, Any]] = field(default_factory=dict)
    """When each graph was compiled: compile id -> {t, wall_time, frame_calls}."""
    guard_check_us: dict[str, float] = field(default_factory=dict)
    """One warm check of each variant's guards, timed right after they were built (us)."""
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    graph_exceptions: list[dict[str, Any]] = field(default_factory=list)
    """Exceptions raised inside a compiled graph: ``compile_id``, ``type``, ``message``."""
    environment: dict[str, Any] = field(default_factory=dict)
    cache_dir_at_start: dict[str, Any] | None = None
    """Inductor's cache dir when the probes were installed, before any compile: ``dir`` and
    the entries its ``fx_graph`` and ``aotautograd`` caches held (``cache_dir`` event)."""
    compile_calls: list[dict[str, Any]] = field(default_factory=list)
    paired_calls: list[dict[str, Any]] = field(default_factory=list)
    """``run --profile``: per compiled callable, its paired calls after warmup, compiled and
    eager one after the other (``compiled_ms``, ``eager_ms``, ``target``, ``name``, the
    user's ``file``/``line`` that compiled it)."""
    plain_calls: list[dict[str, Any]] = field(default_factory=list)
    """``run --profile``: per paired compiled callable, its calls timed after the pairs, as the
    program made them (``plain_ms``): what a try of a fix of that call is judged by."""
    optimizer_trials: list[dict[str, Any]] = field(default_factory=list)
    """``run --profile``: each eager optimizer's step timed against its fused (or foreach)
    variant on copies of its parameters, after the window (torchcompat/optimizer_trial.py:
    ``optimizer``, ``variant``, ``default_ms``, ``variant_ms``, or ``skipped``)."""
    output_digests: list[dict[str, Any]] = field(default_factory=list)
    """``run --try-fixes``: what each compiled callable returned on its first calls
    (``output_digest`` events: ``site``, ``call``, ``values``: torchcompat/digests.py)."""
    compile_sites: dict[str, SourceLine] = field(default_factory=dict)
    """Compile id -> the user's line that called the frame it compiled (``compile_site``
    events, made as its first graph is wrapped), the first process's where several share
    ids."""
    attribute_stores: list[dict[str, Any]] = field(default_factory=list)
    """The user's lines that store plain Python values in module attributes
    (``attribute_store`` events: ``module`` class, ``attr``, ``file``, ``line``, ``code``),
    each line once: who changes a value a compiled frame guards."""
    module_hooks: list[dict[str, Any]] = field(default_factory=list)
    """Hooks the program registered on or removed from modules (``module_hook`` events:
    ``t``, ``action`` add|remove, ``method``, ``module``, the user's ``file``/``line``)."""
    try_fix: list[dict[str, Any]] = field(default_factory=list)
    """What a ``--try-fixes`` re-run applied (``try_fix_*`` events: config set, compile
    wrapped, marks made)."""
    """The program's first torch.compile calls: ``target`` (module, module.compile(), method,
    function), ``name``, and the user's ``file``/``line``/``function`` that called it."""
    hooks: dict[str, Any] = field(default_factory=dict)
    """Which probes were installed (``graphs``, ``breaks``) and probe errors."""
    bad_lines: int = 0
    snapshot_t: float | None = None
    """When the counters were last saved (seconds after start); None: never, heat unknown."""
    complete: bool = False
    """Every process saved its counters at exit; otherwise counts are lower bounds."""
    fatal_error: list[str] = field(default_factory=list)
    """faulthandler's report of a fatal signal: the error line and the crashing thread's stack."""
    ranks: dict[int, ProbeData] = field(default_factory=dict)
    """The same counters per rank (processes started by torchrun); the fields above sum them."""

    def for_rank(self, rank: int | None) -> ProbeData:
        """The probes of one rank's process; all processes when ranks were not recorded."""
        if rank is None:
            return self
        return self.ranks.get(rank, self)
