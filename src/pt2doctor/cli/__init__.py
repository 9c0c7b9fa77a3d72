"""Command line: ``main(argv) -> exit code``; one module per command, registered in COMMANDS."""

from __future__ import annotations

import sys

import click

from pt2doctor import __version__
from pt2doctor.cli.ablate import ablate_command
from pt2doctor.cli.check import check_command
from pt2doctor.cli.diff import diff_command
from pt2doctor.cli.opcheck import opcheck_command
from pt2doctor.cli.report import report_command
from pt2doctor.cli.run import run_command
from pt2doctor.errors import Pt2DoctorError

COMMANDS = [
    report_command,
    run_command,
    check_command,
    ablate_command,
    opcheck_command,
    diff_command,
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pt2doctor")
def cli() -> None:
    """Explain and verify torch.compile: compiles, recompiles, graph breaks."""


for _command in COMMANDS:
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (0 ok, 1 findings/strict failures, 2 bad input)."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        with click.Context(cli, info_name="pt2doctor") as ctx:
            click.echo(cli.get_help(ctx))
        return 2
    try:
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
    except OSError as error:  # an unreadable or unwritable path the checks did not catch
        where = f" {error.filename}" if error.filename else ""
        click.echo(f"pt2doctor: error:{where}: {error.strerror or error}", err=True)
        return 2
    except BrokenPipeError:
        sys.stderr.close()
        return 1
    return result if isinstance(result, int) else 0
