"""``python -m engine lab days/dayNN.yaml``: run the day's own lab once, keep its figures.

Writes ``days/dayNN.measured/<machine>.json`` (schema in engine.lab.store) with the machine,
the date, the command, the lab files' hash, the wall time and the transcript. A lab that fails,
times out, or reports the wrong figures gets one line and exit status 2; nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine import numbers
from engine.experiments.lab.measure import measure


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, help="the day's spec, e.g. days/day01.yaml")
    parser.add_argument(
        "--machine", metavar="NAME", help="what the posts call this machine (default: CPU model and cores)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="where to write <machine>.json (default: days/dayNN.measured/)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not echo the lab's output")


def run(args: argparse.Namespace) -> int:
    doc, path = measure(
        args.spec,
        machine_name=args.machine,
        out_dir=args.out,
        echo=None if args.quiet else sys.stdout,
        status=sys.stderr,
    )
    print(f"wrote {path} ({numbers.fixed(doc['wall_seconds'])} s on {doc['machine']['name']})")
    for name, fig in doc["figures"].items():  # as recorded, in the spec's unit, to 4 figures
        print(f"  {name} = {numbers.precise(fig['value'])} {fig['unit']}: {fig['about']}")
    return 0
