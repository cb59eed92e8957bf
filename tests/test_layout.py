"""The README's Layout section names every folder and every top-level module of the tree, and
nothing that is not there: a newcomer's map cannot fall behind the code."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOP = ["days", "templates", "out", "tests", "engine"]


def listed() -> set[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    return {m.group(1).rstrip("/") for m in re.finditer(r"^(\S+)\s{2,}\S", block, re.M)}


def in_tree() -> set[str]:
    engine = REPO / "engine"
    folders = {
        f"engine/{p.name}" for p in engine.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
    }
    modules = {f"engine/{p.name}" for p in engine.glob("*.py") if not p.name.startswith("__")}
    return set(TOP) | folders | modules


def test_the_layout_lists_exactly_the_tree():
    missing, stale = in_tree() - listed(), listed() - in_tree()
    assert not missing, f"README Layout does not list: {sorted(missing)}"
    assert not stale, f"README Layout lists what is not there: {sorted(stale)}"


def test_no_two_engine_modules_share_a_name_across_unrelated_packages():
    """A name said twice means one idea in two layers, and the package says which layer: a
    command and the section it runs (commands/lab.py, experiments/lab/), an axis's registry.
    Any other repeat is a name meaning two things."""
    layers = {"commands", "experiments", "charts"}  # a command, a section, a chart named after its idea
    seen: dict[str, list[str]] = {}
    for path in (REPO / "engine").rglob("*.py"):
        if path.name.startswith("__") or "__pycache__" in path.parts:
            continue
        seen.setdefault(path.stem, []).append(path.parent.name)
    repeats = {
        name: where
        for name, where in seen.items()
        if len(where) > 1 and name != "registry" and sum(w not in layers for w in where) > 1
    }
    allowed = {  # one idea in two layers, the package naming the layer
        "spec": "a section's spec model beside its section (lab, workload) and the day's (engine)",
        "steptime": "the step-time models (batching) and measuring them on a device (gpubench)",
        "store": "a lab's measurement file (lab) and a sweep's stored points (sweep)",
        "shapes": "published model shapes (catalog) and the bench's model built from them (gpubench)",
        "runner": "running a lab (lab) and running the GPU bench (gpubench)",
        "simulate": "the queueing simulation (queueing) and the simulate command (commands)",
    }
    unexplained = {name: where for name, where in repeats.items() if name not in allowed}
    assert not unexplained, unexplained
