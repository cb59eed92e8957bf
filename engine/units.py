"""The units a figure may be in, and bytes said once.

Why a closed table: a figure's unit decides how a post prints it (engine.numbers: 92 ns,
4.0 KiB, 110x) and whether two figures can be divided; an unknown unit, or a lab reporting bytes
where the spec expects nanoseconds, must stop the run rather than reach a post. Within one
dimension a value converts exactly (a lab may report µs where the spec says ns); across
dimensions it is refused. A size or a rate belongs to a system, binary (KiB, 2**10) or decimal
(kB, 10**3), because a figure is printed in the system it was recorded in: an author who
measured 8.192 MB writes "8 MB", not "7.8 MiB".

GiB and MiB are binary (2**30, 2**20 bytes), as the lab and vLLM count; how a number is printed
in any unit is engine.numbers'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator


@dataclass(frozen=True)
class Unit:
    name: str  # as written in the spec and the measurement file
    dimension: str  # time, bytes, rate, ratio, count, count_rate, percent
    factor: float  # how many base units (seconds, bytes, bytes/s, 1) one of it is
    system: str = ""  # sizes and rates: binary or decimal prefixes ("" where there is one system)


_UNITS = [
    Unit("ns", "time", 1e-9),
    Unit("us", "time", 1e-6),
    Unit("µs", "time", 1e-6),
    Unit("ms", "time", 1e-3),
    Unit("s", "time", 1.0),
    # A bare byte belongs to both systems; it scales in binary, as the lab and vLLM count.
    Unit("B", "bytes", 1.0, "binary"),
    Unit("KiB", "bytes", 2.0**10, "binary"),
    Unit("MiB", "bytes", 2.0**20, "binary"),
    Unit("GiB", "bytes", 2.0**30, "binary"),
    Unit("TiB", "bytes", 2.0**40, "binary"),
    Unit("kB", "bytes", 1e3, "decimal"),
    Unit("MB", "bytes", 1e6, "decimal"),
    Unit("GB", "bytes", 1e9, "decimal"),
    Unit("TB", "bytes", 1e12, "decimal"),
    Unit("B/s", "rate", 1.0, "binary"),
    Unit("KiB/s", "rate", 2.0**10, "binary"),
    Unit("MiB/s", "rate", 2.0**20, "binary"),
    Unit("GiB/s", "rate", 2.0**30, "binary"),
    Unit("TiB/s", "rate", 2.0**40, "binary"),
    Unit("kB/s", "rate", 1e3, "decimal"),
    Unit("MB/s", "rate", 1e6, "decimal"),
    Unit("GB/s", "rate", 1e9, "decimal"),
    Unit("TB/s", "rate", 1e12, "decimal"),
    Unit("x", "ratio", 1.0),
    Unit("count", "count", 1.0),
    Unit("ops/s", "count_rate", 1.0),
    Unit("%", "percent", 0.01),
]
UNITS: dict[str, Unit] = {u.name: u for u in _UNITS}


# What cannot be below zero when it is measured: a duration, a size, a rate. A ratio, a count
# or a percentage may be a change, which can be negative.
NON_NEGATIVE = frozenset({"time", "bytes", "rate", "count_rate"})


# What a lab's figure or a set value can be, in any unit here: a femtosecond to an exabyte. Past
# them a value is a corrupt or hand-edited file (1e300 ns, 5e-324 ms), and would print as a
# number hundreds of digits long, or divide into one.
MIN_MAGNITUDE, MAX_MAGNITUDE = 1e-15, 1e18


def check_plausible(value: float, unit_name: str) -> None:
    """A ValueError for a value its unit makes impossible (a negative duration, size or rate),
    or no measurement or setting holds (a magnitude past MIN_MAGNITUDE to MAX_MAGNITUDE)."""
    found = UNITS.get(unit_name)
    if found is not None and found.dimension in NON_NEGATIVE and value < 0:
        raise ValueError(f"a {found.dimension} cannot be negative, got {value:g} {unit_name}")
    if value and not MIN_MAGNITUDE <= abs(value) <= MAX_MAGNITUDE:
        raise ValueError(
            f"{value:g} {unit_name} is past what a measurement or a setting holds "
            f"(a magnitude from {MIN_MAGNITUDE:g} to {MAX_MAGNITUDE:g}, or 0)"
        )


def _known(name: str) -> str:
    unit(name)  # a ValueError naming the known units
    return name


# A unit as a spec, a measurement or a set value writes it: one of the table's.
UnitName = Annotated[str, AfterValidator(_known)]


def unit(name: str) -> Unit:
    """The unit called ``name``; a ValueError listing the known ones otherwise."""
    try:
        return UNITS[name]
    except KeyError:
        raise ValueError(f"unknown unit {name!r}; known: {', '.join(UNITS)}") from None


def convertible(from_unit: str, to_unit: str) -> tuple[Unit, Unit]:
    """The two units, if one converts to the other; a ValueError across dimensions."""
    src, dst = unit(from_unit), unit(to_unit)
    if src.dimension != dst.dimension:
        raise ValueError(f"{from_unit} is a {src.dimension}, not a {dst.dimension} like {to_unit}")
    return src, dst


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit``; a ValueError across dimensions."""
    src, dst = convertible(from_unit, to_unit)
    if src == dst:
        return value  # exact: a value in the unit asked for is not scaled there and back
    return value * src.factor / dst.factor


def base(value: float, unit_name: str) -> float:
    """The value in its dimension's base unit: seconds, bytes, bytes per second, or 1."""
    return value * unit(unit_name).factor


def figure_base(fig: Any, dimension: str | None = None) -> float:
    """A figure dict's value in base units (a plain number is taken as already in them)."""
    if isinstance(fig, dict):
        found = unit(fig["unit"])
        if dimension is not None and found.dimension != dimension:
            raise ValueError(f"a {found.dimension} figure ({fig['unit']}) where a {dimension} is needed")
        return float(fig["value"]) * found.factor
    return float(fig)


def ratio_of(numerator: Any, denominator: Any) -> float:
    """numerator / denominator, both figures of one dimension (or plain numbers)."""
    if isinstance(numerator, dict) and isinstance(denominator, dict):
        top, bottom = unit(numerator["unit"]), unit(denominator["unit"])
        if top.dimension != bottom.dimension:
            raise ValueError(f"cannot divide a {top.dimension} by a {bottom.dimension}")
    down = figure_base(denominator)
    if down == 0:
        raise ValueError("division by a zero figure")
    return figure_base(numerator) / down


# ---- bytes ------------------------------------------------------------------------------------


GIB = 1 << 30
MIB = 1 << 20


def gib_bytes(gib: float) -> int:
    """A size a person wrote in GiB, as whole bytes: the nearest, so 54.93 GiB (a vLLM log line)
    is the byte count vLLM meant, not one byte short of it."""
    return int(round(gib * GIB))
