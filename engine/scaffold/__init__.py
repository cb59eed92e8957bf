"""``python -m engine new N``: a new day from a lab script (or folder), or from an existing day.

What it writes: ``days/dayNN.yaml``, the lab in ``days/dayNN.lab/`` with ``labkit.py`` beside it,
and ``templates/dayNN/`` (``linkedin.md.j2``, ``x-thread.md.j2``, ``carousel/slides.md.j2``). It
never overwrites: if any of those exists, nothing is written. Everything is planned in memory
and the spec validated first, so a refusal leaves no half-made day; the files are then created
exclusively, and removed again if one cannot be.

A lab that uses labkit is read from its source; one that imports nothing is run once, contained
as ``make lab-dayNN`` runs it, to see what it prints (engine.scaffold.detect). Either way the
measurement itself is taken by ``make lab-dayNN``, the command this prints next.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine import yamlfile
from engine.charts import declared
from engine.errors import UserError
from engine.lab import labfiles, runner
from engine.lab.runner import KIT_DIR
from engine.limits import (
    MAX_SPEC_BYTES,
    MAX_TEMPLATE_BYTES,
    MAX_TRACE_BYTES,
    present,
    read_bytes_limited,
    read_text_limited,
)
from engine.outdir import atomic
from engine.platforms import registry as platforms
from engine.render import slides
from engine.scaffold import detect, drafts
from engine.spec import spec_of

MAX_LAB_FILES = 200
MAX_LAB_BYTES = 64 * 2**20
SCAN_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Plan:
    """Every file the new day will have, by path, with its bytes (a lab file: copied as is)."""

    files: dict[Path, bytes]
    next_step: str
    notes: list[str] = field(default_factory=list)  # what the person should know of the scaffold


def _folder(day: int) -> str:
    return f"day{day:02d}"


def _check_free(paths: list[Path]) -> None:
    taken = [p for p in paths if present(p)]
    if taken:
        raise UserError(
            "already exists; a new day never overwrites a file (pick another day number)", file=taken[0]
        )


def _latest_spec(days: Path) -> dict[str, Any] | None:
    specs = sorted(days.glob("day[0-9]*.yaml"), key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
    if not specs:
        return None
    data = yamlfile.read(specs[-1], MAX_SPEC_BYTES, "spec")
    return data if isinstance(data, dict) else None


def _lab_files(source: Path) -> tuple[dict[str, bytes], str]:
    """The lab's files by relative path, and its script's name."""
    if source.is_file():
        return {source.name: _read(source)}, source.name
    if not source.is_dir():
        raise UserError("no such lab script or folder", file=source, field="--lab")
    try:
        listed: list[Path] | None = labfiles.lab_files(source)
    except ValueError:  # past the engine's ceiling for any lab folder, so past this one's too
        listed = None
    if listed is None or len(listed) > MAX_LAB_FILES:
        raise UserError(
            f"the lab folder has over {MAX_LAB_FILES} files, the stated limit", file=source, field="--lab"
        )
    files = {p.relative_to(source).as_posix(): p for p in listed}
    scripts: list[str] = [n for n in ("lab.py", "main.py", "run.py") if n in files] or sorted(
        n for n in files if n.endswith(".py") and "/" not in n and n != "labkit.py"
    )
    if len(scripts) != 1 and "lab.py" not in files:
        raise UserError(
            "cannot tell which file is the lab: name it lab.py, or give the script itself",
            file=source,
            field="--lab",
        )
    total = sum(p.stat().st_size for p in files.values())
    if total > MAX_LAB_BYTES:
        raise UserError(
            f"the lab folder holds over {MAX_LAB_BYTES >> 20} MiB, the stated limit",
            file=source,
            field="--lab",
        )
    return {name: _read(path) for name, path in files.items() if name != "labkit.py"}, scripts[0]


def _read(path: Path) -> bytes:
    """One of the lab's files, through the one bounded reader: a regular file within the limit,
    never a link (copied, its target's text would land in the new day)."""
    return read_bytes_limited(path, MAX_LAB_BYTES, "lab", field="--lab", follow_symlinks=False)


def _scan_output(files: dict[str, bytes], script: str, status: Any) -> str:
    """Run the lab once in a scratch copy of its folder, as the lab command would, and return
    what it printed; nothing of the run is kept."""
    with tempfile.TemporaryDirectory(prefix="new-day-") as tmp:
        folder = Path(tmp) / "lab"
        for name, data in files.items():
            atomic.write_bytes(folder / name, data, what="lab file", root=Path(tmp), durable=False)
        try:
            command = runner.command_for(folder / script, [])
        except ValueError as err:
            raise UserError(str(err), field="--lab") from None
        if status is not None:
            status.write(f"running {script} once to read what it prints (timeout {SCAN_TIMEOUT_S:g} s)\n")
        run = runner.run_lab(command, folder, SCAN_TIMEOUT_S)
    if run.exit_status != 0:
        why = (
            "ran past its timeout"
            if run.exit_status is None
            else f"failed with exit status {run.exit_status}"
        )
        raise UserError(f"the lab {why}; fix it so it runs, then scaffold again", field="--lab")
    return run.text


def plan_from_lab(
    day: int, lab: Path, *, days: Path, templates: Path, title: str | None, status: Any = None
) -> Plan:
    folder = _folder(day)
    lab_dir = days / f"{folder}.lab"
    # Refused before the lab runs (a minute, perhaps) when the day's files are there already.
    _check_free([days / f"{folder}.yaml", *(templates / folder / name for name in TEMPLATES)])
    files, script = _lab_files(lab)
    source = files[script].decode("utf-8", "replace") if script.endswith(".py") else ""
    kit = detect.uses_labkit(source)
    found = detect.read_calls(source) if kit else detect.Found()
    if not kit:
        found = detect.read_output(_scan_output(files, script, status))
        if found.empty:
            raise UserError(
                "found no figures: the lab records none with labkit, and prints no 'name: number unit' "
                "line or table the engine can read (see README, Write a new day)",
                field="--lab",
            )
    found.title = title or detect.read_calls(source).title
    spec = drafts.spec_data(
        day, found.title or f"Day {day} lab", found, script=f"{folder}.lab/{script}", like=_latest_spec(days)
    )
    _validate(spec, days / f"{folder}.yaml")
    chart_names = [declared.entry_name(c) for c in spec["charts"]]
    planned = {lab_dir / name: data for name, data in files.items()}
    planned[lab_dir / "labkit.py"] = (KIT_DIR / "labkit.py").read_bytes()  # the engine's own file
    planned[days / f"{folder}.yaml"] = drafts.spec_yaml(spec, lab_dir.name, printed=not kit).encode()
    planned.update(_templates(templates / folder, found, chart_names, spec))
    left_out = [f"left out (no unit the engine knows): {line}" for line in found.unknown_units]
    return Plan(planned, f"make lab-{folder}   (runs the lab once; then: make {folder})", left_out)


# A day's templates as written: the LinkedIn post, the X thread (the thread the other thread
# platforms re-flow) and the carousel's words, each named where its draft or slides are defined.
TEMPLATES = (
    f"{platforms.get('linkedin').draft}.j2",
    f"{platforms.get('x').draft}.j2",
    slides.TEMPLATE,
)


def _templates(
    folder: Path, found: detect.Found, charts: list[str], spec: dict[str, Any]
) -> dict[Path, bytes]:
    slides = [s["chart"] for s in spec["carousel"]["slides"] if isinstance(s, dict)]
    texts = (
        drafts.linkedin(found),
        drafts.x_thread(found, charts),
        drafts.carousel(found, slides, spec["charts"]),
    )
    return {folder / name: text.encode() for name, text in zip(TEMPLATES, texts)}


def _validate(spec: dict[str, Any], path: Path) -> None:
    spec_of(spec, path)


def plan_from_day(day: int, source_day: int, *, days: Path, templates: Path, title: str | None) -> Plan:
    """Day N as a copy of Day M: its spec (the day, the title and the lab's folder renamed), its
    templates and its lab folder; no measurement is copied."""
    src, dst = _folder(source_day), _folder(day)
    spec_path = days / f"{src}.yaml"
    if not spec_path.is_file():
        raise UserError("no such day to start from", file=spec_path, field="--from")
    text = read_text_limited(spec_path, MAX_SPEC_BYTES, "spec", field="--from")
    text, count = re.subn(r"(?m)^day:\s*\d+\s*$", f"day: {day}", text, count=1)
    if count != 1:
        raise UserError("has no 'day: N' line to renumber", file=spec_path, field="day")
    text = text.replace(f"{src}.lab/", f"{dst}.lab/").replace(f"{src}.workload", f"{dst}.workload")
    if title is not None:
        line = "title: " + yaml.safe_dump(title, width=1000).strip().removesuffix("...").strip()
        text = re.sub(r"(?m)^title:.*$", lambda _: line, text, count=1)  # the title as written
    _validate(yamlfile.parse(text, spec_path), days / f"{dst}.yaml")
    planned: dict[Path, bytes] = {days / f"{dst}.yaml": text.encode()}
    for path in sorted((templates / src).rglob("*")):
        if path.is_file() or path.is_symlink():  # a link is refused by name, not copied through
            planned[templates / dst / path.relative_to(templates / src)] = read_bytes_limited(
                path, MAX_TEMPLATE_BYTES, "template", field="--from", follow_symlinks=False
            )
    lab = days / f"{src}.lab"
    if lab.is_dir():
        for path in labfiles.lab_files(lab):
            planned[days / f"{dst}.lab" / path.relative_to(lab)] = _read(path)
    workload = days / f"{src}.workload.csv"
    if workload.is_file():
        planned[days / f"{dst}.workload.csv"] = read_bytes_limited(
            workload, MAX_TRACE_BYTES, "workload", field="--from", follow_symlinks=False
        )
    has_lab = (days / f"{src}.lab").is_dir()
    step = f"make lab-{dst}   (then: make {dst})" if has_lab else f"make {dst}"
    return Plan(planned, step)


def write(plan: Plan) -> list[Path]:
    """Create every planned file, none of which may exist; on any failure, remove those made."""
    _check_free(list(plan.files))
    made: list[Path] = []
    try:
        for path, data in plan.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as out:  # a write ("x": never over a file), not a read
                made.append(path)
                out.write(data)
    except OSError:
        for path in reversed(made):
            path.unlink(missing_ok=True)
        raise
    return made
