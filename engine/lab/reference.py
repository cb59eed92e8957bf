"""Published figures a lab's measurements are shown beside, each file with its citation.

A reference file (engine/catalog/reference/<name>.yaml) holds a ``source`` (title, author, url,
year, a short name for the posts) and ``figures`` (value, unit, about). They are quoted as
"<short> say …", never as measured: the post says where each number came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import units, yamlfile
from engine.errors import UserError
from engine.limits import MAX_CONFIG_BYTES

REFERENCE_DIR = Path(__file__).resolve().parent.parent / "catalog" / "reference"


def load_reference(name: str) -> dict[str, Any]:
    """The reference file ``name`` as {"source": {...}, "figures": {key: {value, unit, about}}}."""
    path = REFERENCE_DIR / f"{name}.yaml"
    if not path.is_file():
        have = ", ".join(sorted(p.stem for p in REFERENCE_DIR.glob("*.yaml"))) or "none"
        raise UserError(f"no reference file {name!r} (have: {have})", field="lab.reference")
    doc = yamlfile.read(path, MAX_CONFIG_BYTES, "reference")
    if not isinstance(doc, dict):
        raise UserError("a reference file must be a mapping", file=path)
    source = doc.get("source") or {}
    for key in ("title", "author", "url", "year", "short"):
        if key not in source:
            raise UserError(f"reference without source.{key}", file=path, field="source")
    figures = {}
    for key, fig in (doc.get("figures") or {}).items():
        try:
            units.unit(fig["unit"])
            figures[key] = {"value": float(fig["value"]), "unit": fig["unit"], "about": str(fig["about"])}
        except (KeyError, TypeError, ValueError) as err:
            raise UserError(f"bad figure ({err})", file=path, field=f"figures.{key}") from None
    return {"name": name, "source": dict(source), "figures": figures}
