"""What a rebuild changed: the figures (old → new) and a word-level diff of each draft.

The person rebuilds after new numbers arrive (a GPU run, a rerun lab) and must see at a glance
which figures moved before they post. The previous results are the ones kept in the day's
``.base.json``; the spec echo (``inputs``), the platform counts and the chart sizes are left
out, so only the numbers the posts are made of are compared.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import numbers
from engine.errors import UserError
from engine.limits import (
    MAX_RESULTS_BYTES,
    load_json,
    read_bytes_limited,
    read_json_object,
)
from engine.outdir.manifest import CHANGES
from engine.outdir.opcodes import opcodes

RESULTS = "results.json"
# Not figures: the spec echoed back, character counts of the drafts, image and page sizes
# (charts, the carousel's pages), identity.
IGNORED = frozenset({"inputs", "checks", "charts", "carousel", "day", "series", "hashtags", "links_back"})
# Not figures either: how the lab ran (its running time, its output's length) and the machine it
# ran on (which the drafts' "Measured on" line names, and their word diff shows).
PROVENANCE = frozenset(
    {("lab", "wall_seconds"), ("lab", "transcript"), ("lab", "terminal"), ("lab", "machine")}
)
# Containers that add nothing to a figure's name ("batching.policies.continuous.utilisation"
# reads "continuous utilisation").
SILENT = frozenset(
    {"policies", "plan", "main", "lines", "seconds", "e2e", "expected", "figures", "tables", "records"}
)


@dataclass(frozen=True)
class Shown:
    """A figure that carries its unit ({value, unit}: a lab's figure, a cell of its table): one
    leaf, compared and shown as the posts write it ('238 ns'), named by its label if it has one."""

    text: str
    label: str | None


ROW_KEYS = ("context", "name", "policy", "label", "utilisation", "batch_size", "load")
_TOKEN = re.compile(r"\s+|\S+")
MAX_ROWS = 50  # a longer list is data for a chart, not a table a post quotes from
MAX_DIFF_CHARS = 200_000  # drafts are a few kB; a word diff of a huge file would take minutes


def flatten(value: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], float | Shown]:
    """Every numeric leaf, keyed by its path; a row of a table is named by its key column, and a
    figure with a unit is one leaf (Shown)."""
    found: dict[tuple[str, ...], float | Shown] = {}
    if isinstance(value, bool) or value is None or path[:2] in PROVENANCE:
        return found
    if isinstance(value, (int, float)):
        found[path] = value
    elif isinstance(value, dict) and _has_unit(value):
        label = value.get("label")
        found[path] = Shown(numbers.figure_text(value), label if isinstance(label, str) and label else None)
    elif isinstance(value, dict):
        for key in sorted(value):
            if not path and key in IGNORED:
                continue
            found.update(flatten(value[key], (*path, str(key))))
    elif isinstance(value, list):
        if len(value) > MAX_ROWS or all(isinstance(v, (int, float)) for v in value):
            return found  # a series behind a chart (a timeline, a CDF), not figures one quotes
        for k, item in enumerate(value):
            label = f"#{k + 1}"
            if isinstance(item, dict):
                row_key = next((r for r in ROW_KEYS if isinstance(item.get(r), (str, int, float))), None)
                if row_key is not None:
                    label = f"{row_key}={item[row_key]}"
            found.update(flatten(item, (*path, label)))
    return found


def _has_unit(value: dict[str, Any]) -> bool:
    number, unit = value.get("value"), value.get("unit")
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not isinstance(unit, str):
        return False
    try:
        numbers.figure_text(value)
    except (KeyError, TypeError, ValueError):  # not a unit the engine writes: its numbers, one by one
        return False
    return True


def figure_name(path: tuple[str, ...]) -> str:
    """('batching','policies','continuous','utilisation') → 'continuous utilisation'."""
    words: list[str] = []
    rows: list[str] = []
    parts = path[1:] if len(path) > 1 else path
    for k, part in enumerate(parts):
        following = parts[k + 1] if k + 1 < len(parts) else ""
        if part in SILENT or "=" in following:
            continue  # a table's name is said by its row: "at context 8,192"
        if "=" in part:
            key, value = part.split("=", 1)
            if key in ("name", "label", "policy"):
                words.append(value)
            else:
                rows.append(f"at {key.replace('_', ' ')} {_pretty_key(value)}")
        elif part.startswith("#"):
            rows.append(part)
        else:
            words.append(part.replace("_", " "))
    return " ".join(words + rows)


def _pretty_key(value: str) -> str:
    try:
        return numbers.count(int(value))
    except ValueError:
        return value


def format_value(path: tuple[str, ...], value: float | Shown | None) -> str:
    if value is None:
        return "—"
    if isinstance(value, Shown):
        return value.text
    key = path[-1] if path else ""
    if isinstance(value, float) and ("utilisation" in key or key.endswith(("share", "fraction"))):
        return numbers.pct(value)
    text = numbers.precise(value)
    return text + "x" if key.endswith(("multiple", "ratio", "speedup")) and isinstance(value, float) else text


def compare_figures(
    old: dict[str, Any] | None, new: dict[str, Any] | None, quoted: str = ""
) -> list[dict[str, Any]]:
    """The figures whose value differs: first those the drafts quoted (their old value appears in
    `quoted`, the previous drafts), then the rest, each group in results.json's order."""
    if old is None or new is None:
        return []
    before, after = flatten(old), flatten(new)
    changed = []
    for path in sorted(set(before) | set(after)):
        a, b = format_value(path, before.get(path)), format_value(path, after.get(path))
        if a == b:
            continue  # float noise below the shown precision is not a change
        leaf = after.get(path, before.get(path))
        changed.append(
            {
                "path": ".".join(path),
                "name": leaf.label if isinstance(leaf, Shown) and leaf.label else figure_name(path),
                "old": a,
                "new": b,
                "quoted": _quotes(quoted, a),
                "depth": len(figure_name(path).split()),
            }
        )
    changed.sort(key=lambda c: (not c["quoted"], c["depth"]))  # stable: results.json order within
    names = [c["name"] for c in changed]
    for c in changed:  # the same short name twice: say which section each belongs to
        if names.count(c["name"]) > 1:
            c["name"] = f"{str(c['path']).split('.')[0].replace('_', ' ')}: {c['name']}"
    return changed


def _quotes(text: str, value: str) -> bool:
    """Does the draft text show this number as a whole token ('31' not inside '2,031')?"""
    return re.search(rf"(?<![\w.,]){re.escape(value)}(?![\w%]|[.,]\d)", text) is not None


def word_diff(old: str, new: str) -> list[list[str]]:
    """[['=', text], ['-', removed], ['+', added], …]: what a page highlights."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    segments: list[list[str]] = []

    def add(kind: str, text: str) -> None:
        if not text:
            return
        if segments and segments[-1][0] == kind:
            segments[-1][1] += text
        else:
            segments.append([kind, text])

    for op, i1, i2, j1, j2 in opcodes(a, b):
        if op == "equal":
            add("=", "".join(a[i1:i2]))
        else:
            add("-", "".join(a[i1:i2]))
            add("+", "".join(b[j1:j2]))
    return segments


def _parse(text: str | None) -> dict[str, Any] | None:
    """The previous build's results as the person last saw them; none if unreadable (the
    review page then shows no figure changes, and the build goes on)."""
    if text is None:
        return None
    try:
        data = load_json(text, RESULTS, "results")
    except UserError:
        return None
    return data if isinstance(data, dict) else None


def compare(old_results: str | None, new_folder: Path, before: dict[str, str]) -> dict[str, Any]:
    """The changes from the previous build (its results.json text; the drafts as the person had
    them in `before`) to the folder about to be put in place."""
    drafts = {}
    for name in sorted(before):
        path = new_folder / name
        if path.is_file() and max(len(before[name]), path.stat().st_size) <= MAX_DIFF_CHARS:
            now = read_bytes_limited(path, MAX_DIFF_CHARS, "draft").decode("utf-8", errors="replace")
            if now != before[name]:
                drafts[name] = word_diff(before[name], now)
    old = _parse(old_results)
    return {
        "previous": old is not None,
        "figures": compare_figures(
            old,
            read_json_object(new_folder / RESULTS, MAX_RESULTS_BYTES, "results"),
            "\n".join(before.values()),
        ),
        "drafts": drafts,
    }


def dumps(changes: dict[str, Any]) -> str:
    return json.dumps(changes, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load(folder: Path) -> dict[str, Any] | None:
    """What the last build of this folder changed, for its review page; None if not recorded,
    or recorded in another shape than the build writes (_as_written)."""
    found = read_json_object(Path(folder) / CHANGES, MAX_RESULTS_BYTES, "changes record")
    return found if found is not None and _as_written(found) else None


def summary(changes: dict[str, Any], limit: int = 4) -> str | None:
    """'3 figures changed: continuous utilisation 72.3% → 74.1%, …' for the terminal."""
    if not changes or not changes.get("previous"):
        return None
    figures = changes.get("figures") or []
    if not figures:
        return "no figure changed since the last build"
    distinct, pairs = [], set()
    for f in figures:  # one quantity under several names (steps, makespan steps): said once
        if (f["old"], f["new"]) not in pairs:
            pairs.add((f["old"], f["new"]))
            distinct.append(f)
    shown = ", ".join(f"{f['name']} {f['old']} → {f['new']}" for f in distinct[:limit])
    more = ""
    if len(distinct) > limit:
        more = f", … (all {len(figures)} on the review page)"
    elif len(distinct) < len(figures):  # every figure counted is accounted for on the line
        folded = len(figures) - len(distinct)
        more = f" (and {folded} more under another name, the same change; all on the review page)"
    noun = "figure" if len(figures) == 1 else "figures"
    return f"{len(figures)} {noun} changed: {shown}{more}"


def page_context(folder: Path) -> dict[str, Any] | None:
    """The review page's "changed since the last build" panel; None after a first build."""
    found = load(folder)
    if not found or not found.get("previous"):
        return None
    return {
        "figures": found.get("figures") or [],
        "drafts": [
            {
                "name": name,
                "paragraphs": changed_paragraphs(segments),
                "edits": sum(1 for kind, _ in segments if kind == "+"),
            }
            for name, segments in sorted((found.get("drafts") or {}).items())
        ],
        "merged": found.get("merged") or [],
        "conflicts": found.get("conflicts") or [],
        "set_aside": found.get("set_aside") or [],
        "summary": summary(found),
    }


def _as_written(found: dict[str, Any]) -> bool:
    """Whether a record has the shape ``compare`` and the commit give it: one edited by hand (or
    by another version) is no panel, rather than a page that cannot be drawn and is blamed on
    results.json. Texts only where the page shows texts, since it shows them as they are."""

    def texts(value: Any, n: int | None = None) -> bool:
        return (
            isinstance(value, list)
            and (n is None or len(value) == n)
            and all(isinstance(v, str) for v in value)
        )

    def rows(key: str, n: int) -> bool:
        value = found.get(key) or []
        return isinstance(value, list) and all(texts(row, n) for row in value)

    figures = found.get("figures") or []
    drafts = found.get("drafts") or {}
    return (
        isinstance(figures, list)
        and all(
            isinstance(f, dict) and all(isinstance(f.get(k), str) for k in ("path", "name", "old", "new"))
            for f in figures
        )
        and isinstance(drafts, dict)
        and all(
            isinstance(segments, list) and all(texts(s, 2) for s in segments) for segments in drafts.values()
        )
        and texts(found.get("merged") or [])
        and rows("conflicts", 3)
        and rows("set_aside", 2)
    )


def changed_paragraphs(segments: list[list[str]]) -> list[dict[str, Any]]:
    """Only the paragraphs of a word diff that changed, each with whether text was skipped before
    it: a page shows what moved, not the whole post again."""
    paragraphs: list[list[list[str]]] = [[]]
    for kind, text in segments:
        if kind != "=":
            paragraphs[-1].append([kind, text])
            continue
        pieces = text.split("\n\n")
        for k, piece in enumerate(pieces):
            if k:
                paragraphs.append([])
            if piece:
                paragraphs[-1].append(["=", piece])
    shown: list[dict[str, Any]] = []
    last = -1
    for index, paragraph in enumerate(paragraphs):
        if any(kind != "=" for kind, _ in paragraph):
            shown.append({"skipped": index > last + 1, "segments": paragraph})
            last = index
    return shown
