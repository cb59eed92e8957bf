"""What a build sees of a lab: the stored measurement, checked against the spec and the lab's
files, never a rerun (Quarto's ``freeze``).

The entry points follow the section-registry shape: ``run(section, location, inputs)`` returns
the JSON-ready results, ``headline(results)`` the build's summary lines, ``review_tables`` and
``review_warnings`` what the review page shows, each given the lab's own result. ``inputs``
carries the day number and the spec's ``measured:`` choice (latest, a file name; ``none`` has
nothing to render from). The package's ``__init__`` registers them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import numbers, units
from engine.errors import UserError
from engine.experiments.lab.spec import LabFigure, LabSection
from engine.given import entry as set_value
from engine.lab import labfiles, runner, store
from engine.lab.reference import load_reference
from engine.measured import measured_dir, resolve_measurement
from engine.sections import Inputs, SpecLocation


def run(section: LabSection, location: SpecLocation, inputs: Inputs) -> dict[str, Any]:
    """The lab's results for the posts: every figure in the spec's unit, labelled with the
    machine it was measured on, and whether the lab changed since."""
    spec_path = Path(location.spec_path)
    day = inputs.day
    rerun = f"run make lab-day{day:02d}"
    choice = inputs.measured or "latest"
    if choice == "none":
        raise UserError(
            "a lab day renders from its measurement: use latest or a file name",
            file=spec_path,
            field="measured",
        )
    folder = measured_dir(spec_path, day)
    try:
        path = resolve_measurement(folder, choice)
    except UserError as err:
        raise UserError(err.message, file=err.file or spec_path, field=err.field) from None
    if path is None:
        raise UserError(f"no measurement yet in {folder}: {rerun}", file=spec_path, field="lab")
    return from_document(section, spec_path, day, store.load(path, day=day), path)


def from_document(
    section: LabSection, spec_path: Path, day: int, doc: dict[str, Any], path: Path
) -> dict[str, Any]:
    """The lab's results from one valid measurement ``doc`` (stored at ``path``), or the
    UserError a build would stop with. ``engine lab`` calls it before writing a measurement, so
    a measurement is only ever replaced by one the build accepts."""
    rerun = f"run make lab-day{day:02d}"
    folder = path.parent
    machine, date = doc["machine"]["name"], _when(doc["date"])
    source = f"measured on {machine}"
    figures = {}
    # The spec's list is the contract when it has one; else every figure the run recorded.
    recorded = [n for n in doc.get("order", []) if n in doc["figures"]]
    recorded += [n for n in doc["figures"] if n not in recorded]
    contract: dict[str, LabFigure | None] = dict(section.figures) or dict.fromkeys(recorded)
    for name, wanted in contract.items():
        got = doc["figures"].get(name)
        if got is None:
            raise UserError(
                f"{path.name} has no figure '{name}' (added after it was measured): {rerun}",
                file=spec_path,
                field=f"lab.figures.{name}",
            )
        unit = wanted.unit if wanted is not None else got["unit"]
        try:
            value = units.convert(got["value"], got["unit"], unit)
        except ValueError as err:
            raise UserError(
                f"{path.name} holds it in {got['unit']}, the spec says {unit} ({err}): {rerun}",
                file=spec_path,
                field=f"lab.figures.{name}.unit",
            ) from None
        about = (wanted.about if wanted is not None else None) or got["about"]
        label = (wanted.label if wanted is not None else None) or got.get("label") or about
        fig = {"value": value, "unit": unit, "about": about, "label": label, "source": source}
        if got.get("line"):
            fig["line"] = got["line"]
        figures[name] = {**fig, "text": numbers.figure_text(fig)}
    for name in [*section.compare, *section.table]:
        if name not in figures:
            raise UserError(
                f"'{name}' is not among the figures of {path.name} ({', '.join(sorted(figures))})",
                file=spec_path,
                field="lab.table" if name in section.table else f"lab.compare.{name}",
            )
    given = {
        name: set_value(name, g["value"], g["unit"], g["about"], g.get("label"))
        for name, g in doc.get("given", {}).items()
    }
    tables = {
        name: {**t, "source": source, "records": records(t)} for name, t in doc.get("tables", {}).items()
    }
    for name in section.tables:
        if name not in tables:
            raise UserError(
                f"{path.name} has no table '{name}' (added after it was measured): {rerun}",
                file=spec_path,
                field=f"lab.tables.{name}",
            )
    changed = _changed(section, spec_path, doc)
    return {
        "source": source,
        "machine": doc["machine"],
        "date": doc["date"],
        "when": date,
        "file": f"{folder.name}/{path.name}",
        "lab_folder": labfiles.lab_dir(spec_path.parent, section.script).name,
        "command": doc["command"],
        "wall_seconds": doc["wall_seconds"],
        "notes": doc["notes"],
        "figures": figures,
        "given": given,
        "tables": tables,
        "stale": bool(changed),
        "stale_message": (
            f"the lab changed since these numbers were measured on {machine} at {date}: {rerun}"
        )
        if changed
        else None,
        "stale_reason": changed,
        "reference": _reference(section, figures),
        "transcript": doc["transcript"],
        "terminal": section.terminal.model_dump(),
        "table": list(section.table) or list(figures),
    }


def records(table: dict[str, Any]) -> list[dict[str, Any]]:
    """A table's rows as templates quote them: by column name, each number a figure
    (``{{ row.p50 | figure }}``), each label its text (``{{ row.strategy }}``)."""
    columns = dict(table["columns"])
    return [
        {
            column: cell
            if unit == "text"
            else {"value": cell, "unit": unit, "text": numbers.figure_text({"value": cell, "unit": unit})}
            for (column, unit), cell in zip(columns.items(), row)
        }
        for row in table["rows"]
    ]


def _when(iso: str) -> str:
    """'2026-11-30T14:40:12Z' → '2026-11-30 14:40 UTC'."""
    return iso.replace("T", " ")[:16] + " UTC"


def _changed(section: LabSection, spec_path: Path, doc: dict[str, Any]) -> str | None:
    """Why the stored numbers may no longer be the lab's, or None: its files, its script or its
    arguments differ from what was run."""
    SpecLocation(spec_path=spec_path).file(section.script, "lab.script")  # not read through a link out
    folder = labfiles.lab_dir(spec_path.parent, section.script)
    if not folder.is_dir():
        return f"the lab folder {folder.name}/ is gone"
    try:
        current = labfiles.content_hash(folder)
    except ValueError as err:
        return str(err)
    if current != doc["lab"]["files_sha256"]:
        return "its files differ from the ones measured"
    if section.script != doc["lab"]["script"]:
        return f"the script is now {section.script}, it was {doc['lab']['script']}"
    if runner.display_command(spec_path.parent / section.script, list(section.args)) != doc["command"]:
        return f"its arguments changed (measured with: {doc['command']})"
    return None


def _reference(section: LabSection, figures: dict[str, Any]) -> dict[str, Any] | None:
    if section.reference is None:
        return None

    ref = load_reference(section.reference)
    compare = {}
    for name, key in section.compare.items():
        published = ref["figures"].get(key)
        if published is None:
            raise UserError(
                f"reference {section.reference!r} has no figure '{key}' (has: {', '.join(ref['figures'])})",
                field=f"lab.compare.{name}",
            )
        try:
            ratio = units.ratio_of(figures[name], published)
        except ValueError as err:
            raise UserError(str(err), field=f"lab.compare.{name}") from None
        compare[name] = {
            **published,
            "text": numbers.figure_text(published),
            "key": key,
            "source": ref["source"]["short"],
            "measured_over_published": ratio,
        }
    return {"name": ref["name"], "source": ref["source"], "compare": compare}


# ---- the build's summary and the review page ------------------------------------------------


def headline(lab: dict[str, Any]) -> list[str]:
    """The day's own headline figures (the spec's ``table:``, else every figure), by label."""
    # '; ' between figures: a label may hold a comma ("Disk, 4 KiB random read").
    shown = "; ".join(
        f"{lab['figures'][name]['label']}: {lab['figures'][name]['text']}" for name in lab["table"]
    ) or "; ".join(  # a lab of tables alone: each table by its rows
        f"{name} ({len(t['rows']):,} row{'' if len(t['rows']) == 1 else 's'})"
        for name, t in lab["tables"].items()
    )
    lines = [f"lab ({lab['source']}, {lab['when']}, {lab['file']}): {shown}"]
    if lab["stale"]:
        lines.append(f"STALE: {lab['stale_message']}")
    return lines


def review_warnings(lab: dict[str, Any]) -> list[str]:
    return [lab["stale_message"]] if lab.get("stale") else []


def review_tables(lab: dict[str, Any]) -> list[dict[str, Any]]:
    """Provenance rows and a figures table, in the review page's table shape."""
    m = lab["machine"]
    rows = [
        ("machine", m["name"]),
        ("CPU", m["cpu"]),
        ("cores", numbers.count(m["cores"])),
        ("memory", numbers.bytes_text(m["memory_bytes"]) if m["memory_bytes"] else "—"),
        ("OS and kernel", f"{m['os']} {m['kernel']} ({m['arch']})"),
        ("Python", m["python"]),
        ("measured at", lab["when"]),
        ("command", f"{lab['lab_folder']}/$ {lab['command']}"),
        ("wall time", numbers.seconds_text(lab["wall_seconds"])),
        ("file", lab["file"]),
        ("lab files", "changed since: " + str(lab["stale_reason"]) if lab["stale"] else "unchanged"),
    ]
    rows += [("note", note) for note in lab["notes"]]
    compare = (lab.get("reference") or {}).get("compare", {})
    # A figure read off the lab's output shows the line it came from, so a wrong pattern shows.
    printed = any(fig.get("line") for fig in lab["figures"].values())
    head = ["figure", "measured", "what it is", "published", *(["printed as"] if printed else [])]
    table_rows = [
        {
            "highlight": name in compare,
            "cells": [
                name,
                fig["text"],
                fig["about"],
                f"{compare[name]['text']} ({compare[name]['about']})" if name in compare else "—",
                *([fig.get("line") or "—"] if printed else []),
            ],
        }
        for name, fig in lab["figures"].items()
    ]
    given = [
        {"highlight": False, "cells": [name, g["text"], g["about"] or g["label"]]}
        for name, g in lab.get("given", {}).items()
    ]
    source = lab["source"] + (" (STALE)" if lab["stale"] else "")
    tables = [
        {
            "title": "Lab: " + lab["lab_folder"],
            "source": source,
            "kind": "measured",
            "rows": rows,
            "table": {"head": head, "rows": table_rows},
        }
    ]
    if given:
        tables.append(
            {
                "title": "Set by the person, not measured",
                "source": "set",
                "kind": "other",
                "rows": [],
                "table": {"head": ["value", "set to", "what it is"], "rows": given},
            }
        )
    ref = lab.get("reference")
    if ref:
        s = ref["source"]
        tables.append(
            {
                "title": "Published figures shown beside the measured ones",
                "source": f"{s['author']}, {s['title']}, {s['url']}",
                "kind": "other",
                "rows": [],
                "table": {
                    "head": ["published", "value"],
                    "rows": [
                        {"highlight": False, "cells": [c["about"], c["text"]]} for c in compare.values()
                    ],
                },
            }
        )
    return tables
