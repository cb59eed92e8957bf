"""``python -m engine review [--out out]``: rebuild every review page from what is in out/.

Run after editing a draft by hand to see it as the feeds would, with fresh counts. Prints the
pages written, the index first: open that one in a browser.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.errors import UserError
from engine.render import review


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("out"),
        metavar="FOLDER",
        help="the output folder holding dayNN/ folders (default: out)",
    )


def run(args: argparse.Namespace) -> int:
    if not args.out.is_dir():
        raise UserError("no such folder; build a day first (make day37)", file=args.out)
    for path in review.write_review(args.out):
        print(path)
    return 0
