"""labkit: record a lab's figures for the post engine. One file, standard library only.

Copy this file (engine/lab/kit/labkit.py) into your lab's folder (``days/dayNN.lab/labkit.py``) and::

    from labkit import figure, note
    figure("ram_random", 92.4, "ns")       # a named figure: value and unit
    note("O_DIRECT refused by tmpfs: page cache dropped with fadvise instead")

Under ``python -m engine lab`` the engine sets LABKIT_FIGURES to a file path, and every call
rewrites that JSON file whole (``{"labkit": 1, "figures": {name: {"value", "unit"}},
"notes": [...]}``). Run as a plain script (no engine, no variable), the helper only prints
what it would have recorded, so the lab works anywhere its folder is copied: the public
repository, a colleague's laptop. A lab that prefers not to import anything may write that
JSON file itself; the file is the contract, this module is a convenience.
"""
from __future__ import annotations

import json
import math
import os
import sys

ENV = "LABKIT_FIGURES"
VERSION = 1
_figures: dict = {}
_notes: list = []


def figure(name: str, value: float, unit: str) -> float:
    """Record figure ``name`` (letters, digits, underscores) as ``value`` in ``unit``;
    returns the value so a lab can keep computing with it."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum() or not name[:1].isalpha():
        raise ValueError(f"figure name {name!r}: use letters, digits and underscores")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"figure {name}: {value!r} is not a finite number")
    _figures[name] = {"value": value, "unit": str(unit)}
    _save(f"{name} = {value:.6g} {unit}")
    return value


def note(text: str) -> None:
    """A sentence the engine keeps with the figures (how something was measured, a fallback)."""
    _notes.append(str(text))
    _save(f"note: {text}")


def _save(plain_line: str) -> None:
    path = os.environ.get(ENV)
    if not path:
        print(f"[labkit] {plain_line}", file=sys.stderr)
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump({"labkit": VERSION, "figures": _figures, "notes": _notes}, out, indent=1)
    os.replace(tmp, path)
