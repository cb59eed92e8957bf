"""What a build reads besides the spec's sections: the device measurement the spec picks, and
the earlier days it links back to.

Measurements from a real device are inputs, like the spec. ``python -m engine bench`` writes
days/dayNN.measured/<device>.json once, on a GPU; the spec's ``measured:`` key (latest, a file
name, or none) makes every later build, on any laptop, read it back so the posts can say what
was measured and where. ``latest`` with no file yet means simulated only: a fresh clone builds
before anyone has rented a GPU. (The file's own schema, reading and writing are
engine.measured's.)

Links back: Day 37 says head-of-line blocking is Day 4's lesson; with the earlier spec at hand,
the post can cite Day 4's own number (how much longer separate lines wait) instead of a sentence
about it. The figure is recomputed from that spec (seeded, so the same as Day 4's post), not
read from out/, so a build never depends on the order days were built in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import measured
from engine.errors import UserError
from engine.sections import SpecLocation, blame, sections
from engine.spec import DaySpec, load_spec


def measurement(spec: DaySpec, location: SpecLocation) -> Path | None:
    """The measurement file the spec's ``measured:`` key picks, or None for simulated only."""
    choice = spec.measured
    if choice is None or choice == "none":
        return None
    folder = measured.measured_dir(location.spec_path, spec.day)
    with blame(location, "measured"):
        return measured.resolve_measurement(folder, choice)


def measured_result(spec: DaySpec, location: SpecLocation, path: Path | None) -> dict[str, Any] | None:
    """The measurement as results.json keeps it, with the few figures a post quotes."""
    if path is None:
        return None
    folder = path.parent
    doc = measured.load_measurement(path, day=spec.day)
    # The figures a post quotes are picked by the day's own settings, when it has them.
    slots = getattr(spec.section("batching"), "slots", None)
    highlight = getattr(spec.section("kv_cache"), "highlight", [])
    return {
        "file": f"{folder.name}/{path.name}",
        "source": f"measured on {doc['device']['name']}",
        "headline": headline(doc, slots, highlight),
        **doc,
    }


def headline(doc: dict[str, Any], slots: int | None, highlight: list[int]) -> dict[str, Any]:
    """The few measured figures a post quotes, picked from the file by rule, not by hand.

    Step time: the largest batch timed (the day's slot count when it fitted) at the shortest
    context, where a decode step is closest to pure weight streaming.
    """
    points = doc["step_time"]["points"]
    step = None
    if points:
        shortest = min(p["context"] for p in points)
        at_shortest = [p for p in points if p["context"] == shortest]
        wanted = [p for p in at_shortest if p["batch"] == slots] or at_shortest
        step = max(wanted, key=lambda p: p["batch"])
    peak = doc["step_time"].get("hbm_peak_bytes_per_s")
    memory = {row["context"]: row for row in doc["memory"]["contexts"]}
    return {
        "device": doc["device"]["name"],
        "model": doc["settings"]["model"]["name"],
        "dtype": doc["settings"]["dtype"],
        "step": step,
        "step_share_of_peak": (step["achieved_bytes_per_s"] / peak) if step and peak else None,
        # On a CPU the bench probes a fixed stand-in budget, not real device memory: nothing a
        # post should quote as 'what fits'.
        "memory_rows": (
            [memory[c] for c in highlight if c in memory] if doc["device"]["kind"] != "cpu" else []
        ),
        "kind": doc["device"]["kind"],
        "batching": recomputed_batching(doc.get("batching")),
    }


def recomputed_batching(batching: dict[str, Any] | None) -> dict[str, Any] | None:
    """The measured batching figures, derived again from the raw wall times and token counts.

    A file's own 'multiple' or 'tokens_per_second' is never quoted as it stands: a hand edit or a
    bug in an older bench would otherwise reach a post unchecked.
    """
    if not batching:
        return None
    policies = {
        name: {
            **run,
            "tokens_per_second": run["tokens"] / run["wall_seconds"],
        }
        for name, run in batching["policies"].items()
    }
    out = {**batching, "policies": policies}
    if "static" in policies and "continuous" in policies:
        out["multiple"] = policies["static"]["wall_seconds"] / policies["continuous"]["wall_seconds"]
    return out


# ---- links back ---------------------------------------------------------------------------


def links_back(spec: DaySpec, location: SpecLocation) -> list[dict[str, Any]]:
    """Each link back with the figure the earlier day's own spec computes."""
    links = []
    for i, link in enumerate(spec.links_back):
        entry: dict[str, Any] = {"day": link.day, "claim": link.claim, "figure": None}
        if link.spec is not None:
            earlier_path = location.file(link.spec, f"links_back.{i}.spec")
            with blame(location, f"links_back.{i}.spec"):
                earlier = load_spec(earlier_path)
            if earlier.day != link.day:  # else Day 4's figure would be credited to "Day 5"
                raise UserError(
                    f"day {link.day}, but {link.spec} is the spec of day {earlier.day}",
                    file=location.spec_path,
                    field=f"links_back.{i}.day",
                )
            entry["figure"] = figure_of(earlier, SpecLocation(spec_path=location.spec_dir / link.spec))
        links.append(entry)
    return links


def figure_of(earlier: DaySpec, location: SpecLocation) -> dict[str, Any] | None:
    """The headline figure of an earlier day: the first of its sections that has one to give."""
    for section in sections():
        model = earlier.section(section.key)
        if model is not None and section.link_figure is not None:
            figure = section.link_figure(model, location)
            if figure is not None:
                return figure
    return None
