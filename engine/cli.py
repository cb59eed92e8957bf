"""The command line: python -m engine COMMAND …

Each command lives in its own module under engine/commands with two functions,
``add_arguments(parser)`` and ``run(args) -> int``. Only the chosen command's module is imported,
so each imports what it needs at its top and the others cost nothing; the heavy optional
libraries (torch, matplotlib) are imported inside the functions that use them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from engine.errors import EXIT_USER_ERROR, UserError

# name → (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("engine.commands.build", "render one or more days: results, drafts, charts"),
    "kv": ("engine.commands.kv", "KV-cache calculator: how many requests fit"),
    "simulate": ("engine.commands.simulate", "batching simulator: static, continuous, paged"),
    "bench": ("engine.commands.bench", "measure on a real device with torch"),
    "check": ("engine.commands.check", "check drafts against X and LinkedIn rules"),
    "review": ("engine.commands.review", "build the review pages for every day in out/"),
    "new": ("engine.commands.new", "scaffold a new day from a lab script or an existing day"),
    "lab": ("engine.commands.lab", "run a day's own lab once and keep its figures"),
    "serve": (
        "engine.commands.serve",
        "live preview: serve out/ locally, rebuild a day when its files change",
    ),
    "sweep": (
        "engine.commands.sweep",
        "capacity planning: a grid of serving configs against latency targets",
    ),
}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line and exit status 2 like every user error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(message, file=self.prog)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """With no command (the top-level help, a command mistyped), every command by name and
    one-line help, and no command module imported; with one, that command and its arguments
    alone, so only its module is imported (a command's module imports what its run needs, at
    its top) and no parser is made for the nine others."""
    parser = _Parser(prog="python -m engine", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        if only is not None and only != name:
            continue
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        if only == name:
            importlib.import_module(module_name).add_arguments(cmd)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The top level takes no option but -h, so a command line that can parse names its command
    # first; anything else gets the parser of every command, and its message lists them all.
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        parser = build_parser(only=chosen)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USER_ERROR
        module = importlib.import_module(COMMANDS[args.command][0])
        return int(module.run(args) or 0)
    except UserError as err:
        print("\n".join(err.lines()), file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:
        # `python -m engine kv --json | head`: the reader left; that is not an error of ours.
        # No flush at exit into the closed pipe.
        sys.stdout = None
        return 0
    except OSError as err:
        if err.filename is None:
            raise
        # The system refusing a path a flag or a spec named (too long a name, no permission, a
        # loop of links), wherever the path was first looked at: one line naming the path, its
        # escapes shown as escapes (the name is the input's).
        shown = UserError(err.strerror or str(err), file=err.filename)
        print("\n".join(shown.lines()), file=sys.stderr)
        return EXIT_USER_ERROR
