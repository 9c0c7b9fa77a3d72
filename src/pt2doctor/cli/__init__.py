"""Command line: ``main(argv) -> exit code``; one module per command, registered in COMMANDS.

Commands load lazily: a command's module (and what it imports: torch-adjacent harnesses for
``check`` and ``ablate``) is imported only when that command runs or shows its own help, so
``pt2doctor report`` starts without paying for the others. The ``--help`` listing reads each
command's one-line summary from COMMANDS instead of importing the command.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import NamedTuple

import click

from pt2doctor import __version__
from pt2doctor.errors import Pt2DoctorError, UsageError


class LazyCommand(NamedTuple):
    """Where a command lives, and the summary the ``--help`` listing shows for it (the start of
    the command's own help text; a test keeps the two in step)."""

    module: str
    attribute: str
    summary: str
    needs_torch: bool = True
    """It runs torch (a program, cases, ops): without torch installed it says so in one line.
    ``report`` and ``diff`` read logs, traces and reports, and never import torch."""


COMMANDS: dict[str, LazyCommand] = {
    "report": LazyCommand(
        "pt2doctor.cli.report",
        "report_command",
        "Explain every compilation in the TORCH_TRACE logs at PATH.",
        needs_torch=False,
    ),
    "run": LazyCommand(
        "pt2doctor.cli.run",
        "run_command",
        "Run COMMAND under probes and explain its compilations.",
    ),
    "check": LazyCommand(
        "pt2doctor.cli.check", "check_command", "Acceptance check of the cases in CASE_FILE."
    ),
    "ablate": LazyCommand(
        "pt2doctor.cli.ablate", "ablate_command", "Localize a crash or wrong result."
    ),
    "opcheck": LazyCommand("pt2doctor.cli.opcheck", "opcheck_command", "Check custom ops."),
    "diff": LazyCommand(
        "pt2doctor.cli.diff", "diff_command", "Compare two runs A and B.", needs_torch=False
    ),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use (see COMMANDS)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        if entry.needs_torch and importlib.util.find_spec("torch") is None:
            return _without_torch(cmd_name, entry)
        # __import__ rather than importlib.import_module: it shows in `python -X importtime`.
        module = __import__(entry.module, fromlist=[entry.attribute])
        command = getattr(module, entry.attribute)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command listing, from the summaries alone (no command module is imported)."""
        rows = [(name, COMMANDS[name].summary) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


TORCH_EXTRA = "pip install 'pt2doctor[run]'"


def _without_torch(name: str, entry: LazyCommand) -> click.Command:
    """The command, on a machine without torch: whatever it is given, one line and exit 2."""

    def refuse(args: tuple[str, ...]) -> None:
        raise UsageError(f"pt2doctor {name} needs torch, which is not installed here: "
                         f"{TORCH_EXTRA} (report and diff work without it)")  # fmt: skip

    return click.Command(
        name,
        callback=refuse,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        help=f"{entry.summary} Needs torch: {TORCH_EXTRA}.",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pt2doctor")
def cli() -> None:
    """Explain and verify torch.compile: compiles, recompiles, graph breaks."""


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush into a closed pipe is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real file descriptor behind stdout (captured in-process)
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (0 ok, 1 findings/strict failures, 2 bad input)."""
    code = _run(sys.argv[1:] if argv is None else argv)
    if argv is None and "torch" in sys.modules:  # a finished command: skip the teardown
        from pt2doctor.forkserver import exit_now

        exit_now(code)
    return code


def _run(args: list[str]) -> int:
    try:
        if not args:
            with click.Context(cli, info_name="pt2doctor") as ctx:
                click.echo(cli.get_help(ctx))
            return 2
        result = cli.main(args=args, prog_name="pt2doctor", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("pt2doctor: interrupted", err=True)
        return 130
    except click.ClickException as error:  # bad arguments: one line, exit 2
        click.echo(f"pt2doctor: error: {error.format_message()} (see --help)", err=True)
        return error.exit_code
    except Pt2DoctorError as error:
        click.echo(f"pt2doctor: error: {error}", err=True)
        return error.exit_code
    except BrokenPipeError:  # stdout closed early (`pt2doctor ... | head`): stop quietly
        _silence_stdout()
        return 1
    except OSError as error:  # an unreadable or unwritable path the checks did not catch
        where = f" {error.filename}" if error.filename else ""
        click.echo(f"pt2doctor: error:{where}: {error.strerror or error}", err=True)
        return 2
    return result if isinstance(result, int) else 0
