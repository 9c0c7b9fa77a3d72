"""A failure's signature, so a repro counts as reproducing only when it fails the same way.

A crash is known by its innermost error, the one the others wrap: torch wraps a backend's
error in ``BackendCompilerFailed: backend='x' raised: ReluCompileError: ...`` or
``InductorError: RuntimeError: ...``, and a repro that compiles the graph directly raises the
inner one bare. Its signature is that error's type and its message with what differs between
two runs of the same failure masked: paths, addresses, numbers, and the names Inductor and
AOTAutograd number (``buf12``, ``op3``, ``arg0_1``, ``primals_2``). A wrong result's signature
is ``diverged``: its numbers are reported beside it, not matched.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# The innermost ``SomeError: message`` named in a one-line error text.
_TYPED = re.compile(r"(?<![\w.])([A-Z]\w*(?:Error|Exception|Failed|Failure|Exit)|Unsupported)\b: ?")
_MASKS = (
    (re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.\-<>]+){2,}"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<addr>"),
    (
        re.compile(r"\b(?:buf|op|arg|primals_|tangents_|getitem_?|tmp|x|s|u)\d+(?:_\d+)*\b"),
        "<name>",
    ),
    (re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?\b"), "<n>"),
    (re.compile(r"\s+"), " "),
)
# Where torch's explanation of an error ends and its advice begins: Dynamo's hints and links,
# and the user frame pt2doctor's one-line summary appends (trace/messages.error_summary). Both
# sides of a comparison are cut there, so a summary and a raw message of one error agree.
_TRAILERS = re.compile(
    r"\s(?:Hint:|Developer debug context:|For more details about this graph break|"
    r"Set TORCHDYNAMO_VERBOSE|from user code:|\(at \S+:\d+ in )"
)
MESSAGE_CHARS = 200
"""How much of the masked message counts (the rest is often a long graph or traceback)."""


class Signature(NamedTuple):
    kind: str
    """``crash``, ``diverged``, or ``exit`` (the program's own ``sys.exit(N)``, no
    exception)."""
    type: str
    """The innermost error's type ('' for a wrong result, or a text naming none)."""
    message: str
    """Its message, masked and cut to MESSAGE_CHARS."""

    def text(self) -> str:
        if self.kind == "diverged":
            return "diverged from eager"
        return f"{self.type}: {self.message}" if self.type else self.message


def masked(message: str) -> str:
    trailer = _TRAILERS.search(message)
    message = message[: trailer.start()] if trailer else message
    for pattern, replacement in _MASKS:
        message = pattern.sub(replacement, message)
    return message.strip()[:MESSAGE_CHARS]


def crash_signature(text: str) -> Signature:
    """The signature of a crash from its one-line error text (``Type: message``, wrappers
    included)."""
    found = list(_TYPED.finditer(text))
    if not found:
        return Signature("crash", "", masked(text))
    innermost = found[-1]
    return Signature("crash", innermost[1], masked(text[innermost.end() :]))


def _exit_signature(code: object) -> Signature:
    """A program's own ``sys.exit(N)``: the same failure wherever N is read from."""
    return Signature("exit", "", f"exit {code}")


def failure_signature(failure: dict[str, object]) -> Signature:
    """The signature of a ladder rung's (or a module trial's) failure."""
    if failure.get("own_exit"):  # the program's own check: its exit status is the failure
        return _exit_signature(failure.get("exit_code"))
    if failure.get("status") == "diverged":
        return Signature("diverged", "", "")
    text = failure.get("root_error") or failure.get("error") or failure.get("root_type") or ""
    return crash_signature(str(text))


_REPRODUCED = re.compile(
    r"^REPRODUCED: (?:.*? raised (?P<error>.*)|(?P<diverged>.*differs.*)"
    r"|the program exited (?P<exit>\d+))$"
)


def repro_signature(verdict_line: str) -> Signature | None:
    """The signature of what a repro printed (``REPRODUCED: ... raised Type: message`` or
    ``REPRODUCED: output 0 differs from eager ...``); None when it did not reproduce."""
    match = _REPRODUCED.match(verdict_line.strip())
    if match is None:
        return None
    if match["diverged"] is not None:
        return Signature("diverged", "", "")
    if match["exit"] is not None:  # the program repro's: the program's own exit status
        return _exit_signature(match["exit"])
    return crash_signature(match["error"])
