"""``python -m engine check out/day37``: every draft's counts against its limits, then what fails,
then every number in an edited draft that traces to nothing (engine.audit), each with its line.

Exit status: 0 when every rule passes, 1 when any fails (each failure named with its draft and
post), 2 for a user error such as a missing folder, and with ``--strict`` 2 for any number that
traces to nothing: a figure typed by hand or kept from an older render is bad input to post.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from engine import audit
from engine.errors import EXIT_USER_ERROR, UserError
from engine.platforms import platforms
from engine.platforms.day_dir import check_day_dir

EXIT_RULES_FAILED = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "folders",
        nargs="+",
        type=Path,
        metavar="FOLDER|FILE",
        help="a built day's output folder, e.g. out/day37, or one draft in it "
        "(out/day37/linkedin.md): only that draft's counts and failures",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 2) on a number in a draft that traces to no result: typed by hand or "
        "stale; accept one on purpose by writing it as {=74.1%%}",
    )


def format_counts(draft: str, counts: list) -> str:
    """One line per draft: ``x-thread.md post 3/7: 241/280 ok``; other counts follow by name."""
    parts = [
        f"{c.value}/{c.limit} {'ok' if c.ok else 'FAIL'}" if c.name == "length" else str(c) for c in counts
    ]
    return f"{draft}: {' · '.join(parts) if parts else 'nothing to count'}"


def _is_draft(name: str) -> bool:
    """A registered platform's draft (or its kept render, linkedin.new.md), or an alt text."""
    stems = {p.draft.split(".")[0] for p in platforms()}
    return name.endswith(".md") and name.split(".")[0] in stems or name.endswith(".alt.txt")


def run(args: argparse.Namespace) -> int:
    failed = untraced = 0
    for path in args.folders:
        folder, only = (path.parent, path.name) if path.is_file() else (path, None)
        if only is not None and not _is_draft(only):
            raise UserError(
                "not a draft: give a day's folder (out/day37), or "
                f"{', '.join(p.draft for p in platforms())} or a chart's .alt.txt in it",
                file=path,
            )
        report = check_day_dir(folder)
        print(f"{path}")
        for draft, counts in report.counts.items():
            if only is None or draft.split(" post ")[0] == only:
                print(f"  {format_counts(draft, counts)}")
        violations = [v for v in report.violations if only is None or v.draft == only]
        for violation in violations:
            print(f"  FAIL {violation}")
        failed += len(violations)
        findings = [f for f in report.numbers if only is None or f.draft == only]
        for line in audit.listed(findings):
            print(f"  NUMBER {line}")
        untraced += len(findings)
    if failed:
        print(f"{failed} rule{'s' if failed != 1 else ''} broken")
    if untraced:
        noun = "number traces" if untraced == 1 else "numbers trace"
        print(f"{untraced} {noun} to no result" + ("" if args.strict else " (--strict fails on them)"))
        if args.strict:
            return EXIT_USER_ERROR
    return EXIT_RULES_FAILED if failed else 0
