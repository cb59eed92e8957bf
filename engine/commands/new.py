"""``python -m engine new N``: scaffold Day N from a lab (``--lab PATH``) or a day (``--from M``).

Writes the spec, the lab folder with labkit beside it, and templates that already build
(engine.scaffold); never overwrites a file, and prints the next command to run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine import scaffold, validation
from engine.errors import one_line
from engine.limits import MAX_SERIES_DAYS
from engine.validation import whole_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "day", type=whole_flag("day", 1, MAX_SERIES_DAYS), help="the new day's number, e.g. 12"
    )
    start = parser.add_mutually_exclusive_group(required=True)
    start.add_argument("--lab", type=Path, metavar="PATH", help="a lab script, or its folder, to copy in")
    start.add_argument(
        "--from",
        dest="from_day",
        type=whole_flag("--from", 1, MAX_SERIES_DAYS),
        metavar="DAY",
        help="start from an existing day's spec and templates",
    )
    parser.add_argument("--title", help="the day's title (default: the lab's docstring, or the day copied)")
    parser.add_argument(
        "--days", type=Path, default=Path("days"), metavar="DIR", help="where day specs live (default: days)"
    )
    parser.add_argument(
        "--templates",
        type=Path,
        default=Path("templates"),
        metavar="DIR",
        help="where templates live (default: templates)",
    )


def run(args: argparse.Namespace) -> int:
    if args.title is not None:
        validation.one_line_flag(args.title, "--title")  # one line, before any file is read
    if args.lab is not None:
        plan = scaffold.plan_from_lab(
            args.day, args.lab, days=args.days, templates=args.templates, title=args.title, status=sys.stderr
        )
    else:
        plan = scaffold.plan_from_day(
            args.day, args.from_day, days=args.days, templates=args.templates, title=args.title
        )
    made = scaffold.write(plan)
    for path in made:  # a lab's file names are the lab's: escaped like any quoted input
        print(one_line(f"  wrote {path}"))
    for note in plan.notes:
        print(one_line(note))
    print(f"next: {plan.next_step}")
    return 0
