"""``python -m engine sweep SPEC.yaml``: capacity planning over a grid of serving configurations.

SPEC is a day's spec with a ``sweep`` section, or a file with only a ``sweep:`` key. Every point
is simulated on all local cores (or as Ray tasks with --ray ADDRESS), priced from the catalog,
and checked against the latency targets. Writes into --out: sweep.csv (every point),
pareto.png and cheapest.png (charts), sweep.json (the summary), and points.jsonl, the results
file that lets an interrupted sweep resume where it stopped (delete it, or pass --fresh, to
recompute). Prints the cheapest configurations that meet the targets.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from engine import yamlfile
from engine.charts import draw as draw_chart
from engine.errors import UserError
from engine.experiments import sweep as experiment
from engine.experiments.sweep import SweepSection
from engine.limits import MAX_SPEC_BYTES, present
from engine.outdir import atomic
from engine.sections import SpecLocation
from engine.spec import spec_of
from engine.sweep import store
from engine.sweep.table import to_csv
from engine.validation import Strict, validate

EXIT_INTERRUPTED = 130  # the shell's code for a run stopped by Ctrl-C


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "spec", metavar="SPEC.yaml", help="a day spec with a 'sweep' section, or a sweep file"
    )
    parser.add_argument("--out", metavar="DIR", help="where to write (default: out/sweep-<spec name>)")
    parser.add_argument(
        "--results", metavar="FILE.jsonl", help="the resumable results file (default: DIR/points.jsonl)"
    )
    parser.add_argument("--fresh", action="store_true", help="recompute every point, ignoring stored results")
    parser.add_argument("--workers", type=int, metavar="N", help="local processes (default: every core)")
    parser.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the points as Ray tasks: 'local' starts Ray here, 'auto' joins a running "
        "cluster, or ray://HEAD:10001 (needs the optional 'ray' extra)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-charts", action="store_true", help="write the table only")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args: argparse.Namespace) -> int:
    spec_path = Path(args.spec)
    section = load_section(spec_path)
    if args.workers is not None and not 1 <= args.workers <= 4096:
        raise UserError(f"must be between 1 and 4096, got {args.workers}", field="--workers")
    out_dir = Path(args.out) if args.out else Path("out") / f"sweep-{spec_path.stem}"
    results_path = Path(args.results) if args.results else out_dir / "points.jsonl"
    if args.fresh and present(results_path):
        store.set_aside(results_path)
    try:
        summary = experiment.run(
            section,
            SpecLocation(spec_path=spec_path),
            store_path=results_path,
            workers=args.workers,
            ray_address=args.ray,
            progress=not args.no_progress,
            full=True,
        )
    except KeyboardInterrupt:
        print(
            f"interrupted: the finished points are in {results_path}; run the same command again to resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    written = write_outputs(
        summary, out_dir, title=f"Capacity sweep: {spec_path.stem}", charts=not args.no_charts
    )
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=2, sort_keys=True))
    else:
        print(report(summary))
        print("wrote " + ", ".join(str(p) for p in written) + f"; results file {results_path}")
    return 0


def load_section(path: Path) -> Any:
    """The sweep section of a day spec, or of a file that holds only `sweep:`."""
    data = yamlfile.read(path, MAX_SPEC_BYTES, "spec")
    if isinstance(data, dict) and set(data) == {"sweep"}:

        class SweepFile(Strict):
            sweep: SweepSection

        return validate(SweepFile, data, file=path).sweep
    section = spec_of(data, path).section("sweep")
    if section is None:
        raise UserError("has no 'sweep' section", file=path, field="sweep")
    return section


def write_outputs(summary: dict[str, Any], out_dir: Path, *, title: str, charts: bool = True) -> list[Path]:
    """sweep.csv, sweep.json and (unless charts is False) pareto.png and cheapest.png."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = summary["rows"]
    written = [_write(out_dir / "sweep.csv", to_csv(rows))]
    doc = {k: v for k, v in summary.items() if k != "rows"}
    written.append(_write(out_dir / "sweep.json", json.dumps(doc, indent=2, sort_keys=True) + "\n"))
    if charts:
        results = {"title": title, "sweep": {**summary, "rows": rows}}
        for name in ("pareto", "cheapest_table"):
            written.append(draw_chart(name, results, out_dir).path)
    return written


def _write(path: Path, text: str) -> Path:
    """Write beside, then rename: a killed run never leaves half a table."""
    return atomic.write_text(path, text, what="sweep table")


def report(summary: dict[str, Any]) -> str:
    """What the terminal shows: the sweep in one line, then the cheapest configurations."""
    w = summary["workload"]
    targets = ", ".join(f"{k} ≤ {_seconds(v)}" for k, v in summary["targets"].items())
    lines = [
        (
            f"{summary['points']:,} points ({summary['feasible']:,} feasible, {summary['meeting']:,} meet "
            f"the targets) over {w['requests']:,} requests from {w['source']}; targets: {targets}"
        )
    ]
    if summary["unpriced"]:
        lines.append(
            f"no list price in the catalog for {', '.join(summary['unpriced'])}: "
            "those points are not ranked by cost"
        )
    if summary["statement"]:
        lines.append(summary["statement"])
        return "\n".join(lines)
    lines += [
        "",
        "cheapest configurations that meet the targets (simulated; list prices):",
        f"{'$/Mtok':>9}{'$/hour':>9}{'tok/s':>10}{'TTFT p99':>10}{'TPOT p50':>10}{'e2e p99':>10}  configuration",
    ]
    for r in summary["cheapest"]:
        lines.append(
            f"{r['usd_per_million_tokens']:>9.3f}{r['usd_per_hour']:>9.2f}{r['throughput_tok_s']:>10,.0f}"
            f"{_seconds(r['ttft_p99']):>10}{_seconds(r['tpot_p50']):>10}{_seconds(r['e2e_p99']):>10}  {r['config']}"
        )
    if len(summary["cheapest_per_rate"]) > 1:
        lines += ["", "cheapest per arrival rate:"]
        for r in summary["cheapest_per_rate"]:
            lines.append(f"  {r['arrival_rate']:g} req/s: ${r['usd_per_hour']:.2f}/hour  {r['config']}")
    lines.append(
        f"Pareto front (throughput per GPU vs {summary['pareto_latency']}): {len(summary['pareto']):,} points"
    )
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:,.0f} ms" if value < 10 else f"{value:,.1f} s"
