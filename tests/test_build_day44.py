"""Day 44 (capacity planning) through the same pipeline, on a smaller copy of its grid.

The real spec's sweep takes tens of seconds with the current simulator, so the build test runs
the same spec and templates with fewer requests and points; the real spec is validated as is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.pipeline import build
from engine.spec import load_spec

from helpers import DAYS, dump_yaml, load_yaml


def test_the_real_day44_spec_is_valid_and_asks_for_the_sweep_charts():
    spec = load_spec(DAYS / "day44.yaml")
    assert spec.sweep is not None and set(spec.charts) == {"pareto", "cheapest_table"}
    assert spec.sweep.grid.model == ["llama-3-8b"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    days = tmp_path_factory.mktemp("days")
    doc = load_yaml((DAYS / "day44.yaml").read_text())
    doc["sweep"]["workload"]["requests"] = 40
    doc["sweep"]["grid"].update(gpu=["h100-80gb", "a10g"], max_num_seqs=[64], kv_dtype=["auto"])
    doc["sweep"]["workers"] = 1
    (days / "day44.yaml").write_text(dump_yaml(doc))
    out = tmp_path_factory.mktemp("out")
    build(days / "day44.yaml", out)
    return out / "day44"


def test_day44_renders_drafts_and_charts_from_the_sweep(built):
    results = json.loads((built / "results.json").read_text())
    sw = results["sweep"]
    assert sw["points"] == 4 and len(sw["rows"]) == 4
    linkedin = (built / "linkedin.md").read_text()
    for r in sw["cheapest_per_rate"]:
        assert f"${r['usd_per_hour']:.2f} an hour" in linkedin
    if sw["statement"]:
        assert sw["statement"] in linkedin
    assert "4 configurations" in linkedin
    for name in ("pareto.png", "cheapest_table.png", "cheapest_table-linkedin_portrait.png"):
        assert (built / name).stat().st_size > 0
    assert "x-thread.md" in {p.name for p in built.iterdir()}
