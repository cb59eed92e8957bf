"""Where a build's CPU goes, stage by stage (a tool for whoever makes builds faster; not run by
`make bench`, not a test).

    .venv/bin/python tests/bench/build_stages.py              # Day 37 cold, then with one number changed
    .venv/bin/python tests/bench/build_stages.py --repeats 3  # the median of three of each

Each build runs in a fresh process (imports count, as for `make day37`) with a temporary drawing
cache: first cold (empty), then a copy of days/ whose Day 37 replays its requests on 12 slots
instead of 16 (bench_build's "one number changed") against a copy of the cold build's cache and
out folder. The process times, in CPU seconds: the engine's imports, matplotlib's (a cold build's
include matplotlib listing the machine's fonts into the new cache folder), each chart drawn, the
GIF, the carousel and its parts; then what happens inside those, wherever it does: charts'
figures built, PNGs drawn, and matplotlib's text measured and drawn. An indented row is part of
the nearest row above it that is less indented.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_build import DAYS, one_number_changed  # noqa: E402

# Run in the child: wraps the stages, builds, prints one JSON line of {stage: [cpu, calls]}.
CHILD = r"""
import functools, json, sys, time
start = time.process_time()
from engine import cli, pipeline
import engine.charts as charts
from engine.charts import carousel, style
from engine.render import formats
engine_imports = time.process_time() - start
import matplotlib
matplotlib.use("Agg")
import matplotlib.animation
from matplotlib.backends import backend_agg, backend_pdf
from matplotlib.figure import Figure
matplotlib_imports = time.process_time() - start - engine_imports
spent = {"imports: engine": [engine_imports, 1], "imports: matplotlib, PDF and fontTools": [matplotlib_imports, 1]}

def timed(owner, name, label):
    function = getattr(owner, name)
    spent[label] = [0.0, 0]  # the table's order is this one
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        began = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            row = spent[label]
            row[0] += time.process_time() - began
            row[1] += 1
    setattr(owner, name, wrapper)

timed(pipeline, "draw_charts", "charts and GIF (pipeline.draw_charts)")
timed(charts, "_animate", "  the GIF (charts._animate)")
timed(formats, "draw_carousel", "carousel (formats.draw_carousel)")
timed(carousel, "_page", "  a page laid out (carousel._page)")
timed(carousel, "chart_pixels", "    a slide's chart, its post's PNG (carousel.chart_pixels)")
timed(carousel, "shrunk", "  a slide's chart shrunk for its preview (carousel.shrunk)")
timed(backend_pdf.PdfPages, "savefig", "  a page into the PDF (PdfPages.savefig)")
timed(backend_pdf.PdfPages, "close", "  fonts and images embedded (PdfPages.close)")
timed(charts, "figure", "a chart's figure built, for a PNG or a slide")
timed(style, "png_bytes", "a chart drawn into a PNG (style.png_bytes)")
timed(style, "write_png", "a page preview drawn into a PNG (style.write_png)")
timed(backend_agg.RendererAgg, "get_text_width_height_descent", "text measured")
timed(backend_agg.RendererAgg, "draw_text", "text drawn")
sys.argv = ["engine", "build", *sys.argv[1:]]
try:
    code = cli.main()
finally:
    spent["the whole process after start-up"] = [time.process_time() - start, 1]
    print(json.dumps(spent), file=sys.stderr)
sys.exit(code)
"""


def stages(spec: Path, out: Path, cache: Path) -> dict[str, list[float]]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(spec), "--out", str(out)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"build_stages: the build failed:\n{done.stderr}")
    result: dict[str, list[float]] = json.loads(done.stderr.strip().splitlines()[-1])
    return result


def table(title: str, runs: list[dict[str, list[float]]]) -> None:
    print(f"\n{title} (CPU seconds{', median of ' + str(len(runs)) if len(runs) > 1 else ''}; calls)")
    for label in runs[0]:
        cpu = statistics.median(run.get(label, [0.0, 0])[0] for run in runs)
        print(f"  {label:<52}{cpu:7.3f}  ×{int(runs[0][label][1])}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="builds of each kind (the median is shown)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="build-stages-") as temp:
        root = Path(temp)
        cold_runs, changed_runs = [], []
        changed = one_number_changed(root / "days-changed")
        for k in range(max(1, args.repeats)):
            cache, out = root / f"cache-{k}", root / f"out-{k}"
            cold_runs.append(stages(DAYS / "day37.yaml", out, cache))
            shutil.copytree(cache, root / f"cache-{k}-changed")
            shutil.copytree(out, root / f"out-{k}-changed")
            changed_runs.append(stages(changed, root / f"out-{k}-changed", root / f"cache-{k}-changed"))
        table("Day 37, cold (empty drawing cache)", cold_runs)
        table("Day 37, one number changed (slots 16 → 12)", changed_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
