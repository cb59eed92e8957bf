"""``python -m engine build days/dayNN.yaml …``: render days into out/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.errors import EXIT_USER_ERROR
from engine.outdir import report_lines
from engine.pipeline import TEMPLATES, ChecksFailed, build


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("specs", nargs="+", type=Path, help="days/dayNN.yaml files")
    parser.add_argument("--out", type=Path, default=Path("out"), help="output root (out/)")
    parser.add_argument("--force", action="store_true", help="overwrite drafts edited by hand in out/")
    parser.add_argument(
        "--templates",
        type=Path,
        default=None,
        metavar="DIR",
        help="the templates folder (default: templates/)",
    )


def outdir_lines(commit: object) -> list[str]:
    return report_lines(commit)  # type: ignore[arg-type]


def run(args: argparse.Namespace) -> int:
    for spec in args.specs:
        try:
            report = build(spec, args.out, force=args.force, templates_root=args.templates or TEMPLATES)
        except ChecksFailed as failed:
            for line in failed.violations:
                print(f"{spec}: {line}", file=sys.stderr)
            print(f"{spec}: build stopped; out/ left as it was", file=sys.stderr)
            return EXIT_USER_ERROR  # a draft that breaks a platform's rule is bad input, like any other
        print(f"Day {report.day} → {report.folder}/")
        for line in report.summary:
            print(f"  {line}")
        for kept, new in report.kept_edits:
            print(f"  kept your edit of {kept.name}; the new render is {new.name} (--force overwrites)")
        if report.commit is not None:
            for line in outdir_lines(report.commit):
                print(f"  {line}")
        for warning in report.warnings:
            print(f"  warning: {warning}", file=sys.stderr)
        print(f"  drafts: {', '.join(p.name for p in report.written if p.suffix == '.md')}")
        print(f"  review: {report.folder / 'index.html'}")
    return 0
