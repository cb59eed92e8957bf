"""Cost per GPU-hour from the catalog (engine/catalog/prices.yaml), every figure with its source.

Why a separate file from the GPU entries: a card's bandwidth is a datasheet fact, its price a
market quote that moves every few months and differs by provider. Keeping prices apart lets a
person re-price a sweep (edit one file, or pass their own) without touching the hardware facts,
and stored sweep results stay valid because cost is applied after simulation, never inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine import yamlfile
from engine.catalog import load_gpu
from engine.errors import UserError
from engine.limits import MAX_CONFIG_BYTES

PRICES_FILE = Path(__file__).resolve().parent.parent / "catalog" / "prices.yaml"
MAX_PRICE = 1000.0  # dollars per GPU-hour: more than any card rents for
REQUIRED = ("usd_per_gpu_hour", "provider", "page", "as_of")


@dataclass(frozen=True)
class Price:
    gpu: str
    usd_per_gpu_hour: float
    provider: str
    page: str
    as_of: str
    offer: str = ""

    def source(self) -> str:
        return f"{self.provider} on-demand list price, {self.page}, as of {self.as_of}"


@lru_cache(maxsize=4)
def load_prices(path: str | Path = PRICES_FILE) -> dict[str, Price]:
    """Catalog GPU name → its price; a GPU without an entry has no known price."""
    path = Path(path)
    doc = yamlfile.read(path, MAX_CONFIG_BYTES, "prices")
    entries = doc.get("prices") if isinstance(doc, dict) else None
    if not isinstance(entries, dict):
        raise UserError("needs a mapping 'prices' of GPU → price", file=path, field="prices")
    return {str(gpu): _price(str(gpu), entry, path) for gpu, entry in entries.items()}


def _price(gpu: str, entry: Any, path: Path) -> Price:
    where = f"prices.{gpu}"
    if not isinstance(entry, dict):
        raise UserError("must be a mapping", file=path, field=where)
    for key in REQUIRED:
        if entry.get(key) in (None, ""):
            raise UserError("required field is missing", file=path, field=f"{where}.{key}")
    value = entry["usd_per_gpu_hour"]
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and 0 < value <= MAX_PRICE)
    ):
        raise UserError(
            f"must be a number in (0, {MAX_PRICE:g}], got {value!r}",
            file=path,
            field=f"{where}.usd_per_gpu_hour",
        )
    return Price(
        gpu,
        float(value),
        str(entry["provider"]),
        str(entry["page"]),
        str(entry["as_of"]),
        str(entry.get("offer", "")),
    )


def price_of(gpu: str, prices: dict[str, Price]) -> Price | None:
    """The price of a grid's GPU, by catalog name or alias."""
    return prices.get(load_gpu(gpu).name)
