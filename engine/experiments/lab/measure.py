"""``make lab-dayNN``: run the day's lab once and keep what it measured, with provenance.

Nothing is written unless the run is good: it exited 0 within its timeout, reported every
figure the spec lists in a unit of the right kind, left its own files as they were, changed
nothing in days/, templates/ or engine/ (engine.lab.watch), and made a measurement the build
accepts (results.from_document, on the file's text read back). A refused run leaves
the earlier measurement in place. Processes the lab left running outside its session are
stopped by the runner and named on ``status``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from engine import validation
from engine.errors import UserError
from engine.experiments.lab import judge
from engine.experiments.lab import results as lab_results
from engine.experiments.lab.spec import LabSection
from engine.lab import labfiles, machine, runner, store, watch
from engine.measured import measured_dir
from engine.sections import SpecLocation
from engine.spec import load_spec


def measure(
    spec_path: Path,
    *,
    machine_name: str | None = None,
    out_dir: Path | None = None,
    echo: TextIO | None = None,
    status: TextIO | None = None,
) -> tuple[dict, Path]:
    """Run the lab of ``spec_path``; return the measurement and where it was written."""
    spec_path = Path(spec_path)
    spec = load_spec(spec_path)
    section = spec.section("lab")
    if not isinstance(section, LabSection):
        raise UserError("this day has no lab section to run", file=spec_path, field="lab")
    script = SpecLocation(spec_path=spec_path).file(section.script, "lab.script")  # beside its spec
    if not script.is_file():
        raise UserError(f"no such file {script}", file=spec_path, field="lab.script")
    if machine_name is not None:
        validation.one_line_flag(machine_name, "--machine")  # before the lab runs, not after
    folder = labfiles.lab_dir(spec_path.parent, section.script)
    before = _lab_hash(folder, spec_path)
    try:
        command = runner.command_for(script, list(section.args))
    except ValueError as err:
        raise UserError(str(err), file=spec_path, field="lab.script") from None
    target_dir = out_dir if out_dir is not None else measured_dir(spec_path, spec.day)
    about = machine.describe(machine_name)
    date = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    shown = runner.display_command(script, list(section.args))
    if status is not None:
        status.write(f"running {folder.name}/: {shown} (timeout {section.timeout_s:g} s)\n")
    trees = watch.watched(spec_path.parent)
    manifest = watch.snapshot(trees, skip=[folder])
    run = runner.run_lab(command, folder, section.timeout_s, echo=echo, status=status)
    _report_processes(run, status)
    watch.check(manifest, watch.snapshot(trees, skip=[folder]), file=spec_path, field="lab.script")
    judged = judge.judge(run, section, spec_path)
    if _lab_hash(folder, spec_path) != before:
        raise UserError(
            "the lab changed files in its own folder while it ran; write scratch files "
            "elsewhere or with a name starting with '.'; no file written",
            file=spec_path,
            field="lab.script",
        )
    text, truncated = runner.clip_transcript(run.text)
    doc = {
        "schema": store.SCHEMA,
        "day": spec.day,
        "date": date,
        "machine": about,
        "command": shown,
        "lab": {
            "script": section.script,
            "files_sha256": before,
            "files": [p.relative_to(folder).as_posix() for p in labfiles.lab_files(folder)],
        },
        "wall_seconds": round(run.wall_seconds, 3),
        "figures": judged.figures,
        "order": list(judged.figures),  # the lab's own order (JSON keeps keys sorted)
        "given": judged.given,
        "tables": judged.tables,
        "notes": judged.notes,
        "transcript": {
            "text": text,
            "lines": len(run.text.splitlines()),
            "truncated": truncated or run.cut_bytes > 0,
        },
    }
    path = Path(target_dir) / f"{about['slug']}.json"
    _check_accepted(doc, path, section, spec_path, spec.day)
    return doc, store.write(doc, path)


def _check_accepted(doc: dict, path: Path, section: LabSection, spec_path: Path, day: int) -> None:
    """The build's own checks on the file as it would be read back; a UserError if it would
    refuse it (the old measurement then stays)."""
    try:
        back = store.accept(json.loads(store.dumps(doc)), file=path, day=day)  # in memory, no file
        lab_results.from_document(section, spec_path, day, back, path)
    except UserError as err:
        raise UserError(
            f"the build would refuse this run's measurement ({err.message}); no file written",
            file=spec_path,
            field=err.field or "lab",
        ) from None


def _report_processes(run: runner.LabRun, status: TextIO | None) -> None:
    if status is None:
        return
    if run.escaped:
        status.write(
            f"stopped {len(run.escaped)} process(es) the lab left running outside its session: "
            + ", ".join(run.escaped)
            + "\n"
        )
    if run.survivors:
        status.write("still running, could not be stopped: " + ", ".join(run.survivors) + "\n")


def _lab_hash(folder: Path, spec_path: Path) -> str:
    """The lab folder's hash, before the run and after it: a folder past its limits (a huge file,
    too many files, one the lab wrote while it ran) is one line naming the spec's lab field."""
    try:
        return labfiles.content_hash(folder)
    except ValueError as err:
        raise UserError(str(err), file=spec_path, field="lab.script") from None
