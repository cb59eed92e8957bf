"""How a number is written, wherever it appears: drafts, charts, alt text, the review page.

Why one module: a figure quoted in a post, drawn on its table image and read out by its alt text
must be the same text, and it is only the same if one function wrote all three. So every rule
lives here once: how a value is rounded, when a decimal is kept, which unit a figure is shown in.

The rules, as people write numbers:

- Rounding starts from the number's shortest decimal spelling (the one a results file shows) and
  goes half away from zero: 2.675 to two places is 2.68, as a person would round it, not the 2.67
  its nearest binary value would give. Zero is never signed ("-0.0" is "0.0").
- A measurement gets two or three significant figures (``number``): two below 1 (0.084, 0.45,
  0.0012, so a figure that is not zero never reads as one and 84 ns in µs is not "0.1"), one
  decimal below 10 (1.2), a whole number with thousands separators from 10 (92, 1,234). Where the
  decimal goes is decided on the rounded value, so 9.96 prints as 10, never "10.0".
- A percentage short of 100 never reads as 100: 99.95% idle keeps the decimals that say so.
- A count is an integer (``count``): 4 people, not "4.0". A count that is not whole (an average of
  counts) is a measurement and keeps its decimal below 10. The units that count things: ``count``,
  ``x`` (how many of one fit in another), ``ops/s`` and a size in plain bytes (``B``).
- A figure stays in the unit system it was recorded in: 8.192 MB prints as 8.2 MB, 128 MiB as
  128 MiB; within that system it takes the unit that gives it fewer than 1,000 of them (4,096 KiB
  is 4.0 MiB). Time is one system (ns, µs, ms, s). A template may ask for a unit of the same
  dimension (``figure("us")``), never one across dimensions.
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from numbers import Integral, Real
from typing import Any

from engine import units
from engine.units import GIB

# Enough digits for any float written out in full (the largest has 309 before the point, the
# smallest subnormal about 750 after it), so quantize never runs out of precision.
_EXACT = decimal.Context(prec=1100, rounding=decimal.ROUND_HALF_UP, Emax=2000, Emin=-2000)


def _exact(value: Any) -> Decimal:
    """The value as a person reads it: an integer exactly, a float by its shortest spelling."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        return Decimal(int(value))
    if isinstance(value, dict) and {"value", "unit"} <= set(value):
        shown = str(value.get("text") or f"{value['value']} {value['unit']}")[:40]
        raise TypeError(
            f"a figure with its unit ({shown}): print it with the figure filter (| figure), which "
            "writes the unit; this filter takes a plain number"
        )
    if not isinstance(value, Real):
        raise TypeError(f"cannot print {value!r}: not a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"cannot print {value!r}")
    return Decimal(repr(number))


def _round(d: Decimal, digits: int) -> Decimal:
    """``d`` to ``digits`` places, half away from zero; a zero loses its sign."""
    rounded = _EXACT.quantize(d, Decimal(1).scaleb(-digits))
    return rounded.copy_abs() if rounded.is_zero() else rounded


def _spell(d: Decimal, digits: int) -> str:
    """``d`` to ``digits`` places, thousands separated: the one place text is made from a value."""
    return f"{_round(d, digits):,.{digits}f}"


def _measured(d: Decimal) -> Decimal:
    """The value a measurement prints as: to one decimal below 10, to a whole number from 10."""
    tenths = _round(d, 1)
    return tenths if abs(tenths) < 10 else _round(d, 0)


def _number(d: Decimal) -> str:
    if d.is_zero():
        return "0"
    if abs(d) < 1:  # one decimal would be one significant figure (84 ns as "0.1 µs"): keep two
        digits = 1 - d.adjusted()
        two = _round(d, digits)
        if abs(two) < 1:
            return _spell(two, digits).rstrip("0")
    shown = _measured(d)
    return _spell(shown, 0 if abs(shown) >= 10 else 1)


def _short_of_all(percent: Decimal, digits: int) -> int:
    """The decimals a percentage below 100 needs to read below 100: 99.95% idle is not 100%
    idle, nor 99.996% "100.0%" (``digits`` where rounding to them does not reach 100)."""
    if 0 < percent < 100:
        while _round(percent, digits) >= 100:
            digits += 1
    return digits


def _whole(d: Decimal) -> bool:
    return d == d.to_integral_value()


def _count(d: Decimal) -> str:
    return _spell(d, 0) if _whole(d) else _number(d)


# ---- plain numbers ------------------------------------------------------------------------------


def number(value: float) -> str:
    """Two to three significant figures, the way people quote a measurement: 92, 1.2, 1,234.

    A latency measured to ±5% has no business showing 92.347; a zero prints as "0", and 0.004
    as "0.004" rather than as a zero.
    """
    return _number(_exact(value))


def count(value: float) -> str:
    """A count as an integer, 4 → '4', 1234.0 → '1,234'; an average of counts, 2.5 → '2.5'.
    Also a chart's label for a size already in its unit: 8 (GiB), 1.5 (GiB)."""
    return _count(_exact(value))


def fixed(value: float, digits: int = 1) -> str:
    """1124.23 → '1,124.2': exactly the decimals the template asked for."""
    return _spell(_exact(value), digits)


def thousands(value: float) -> str:
    """2048 → '2,048'; a value that is not whole keeps one decimal (2.25 → '2.3')."""
    d = _exact(value)
    return _spell(d, 0) if _whole(d) else _spell(d, 1)


def precise(value: float, figures: int = 4) -> str:
    """``figures`` significant figures, never an exponent, no trailing zeros: the review page's
    detail, 0.123456 → '0.1235', 12345.6 → '12,346', 2.50 → '2.5'."""
    d = _exact(value)
    if d.is_zero():
        return "0"
    digits = max(figures - (d.adjusted() + 1), 0)
    text = _spell(d, digits)
    return text.rstrip("0").rstrip(".") if "." in text else text


def setting(value: float) -> str:
    """A value a person set (a target, a rate, a share of memory), as they typed it: 0.9, 2.5,
    16, 1e-06. Nothing was measured, so nothing is rounded away; Python's general format
    keeps up to six figures, as many as anyone types."""
    if not math.isfinite(float(value)):
        raise ValueError(f"cannot print {value!r}")
    return f"{float(value):g}"


def pct(fraction: float, digits: int = 1) -> str:
    """0.1432 → '14.3%'; 0.99996 → '99.996%', never '100.0%' for less than all."""
    percent = _exact(fraction).scaleb(2)
    return _spell(percent, _short_of_all(percent, digits)) + "%"


def multiple(ratio: float, digits: int = 1) -> str:
    """5.05 → '5.1x': a throughput multiple, with the decimals the template asked for (a whole
    ratio of two figures prints as an integer through ``ratio`` and ``figure``; this filter is
    for a computed multiple, whose decimal is part of the claim)."""
    return _spell(_exact(ratio), digits) + "x"


def gib(num_bytes: float, digits: int = 2) -> str:
    """1073741824 → '1.00 GiB' (GiB = 2**30 bytes, as the lab and vLLM count)."""
    return _spell(_EXACT.divide(_exact(num_bytes), Decimal(GIB)), digits) + " GiB"


def gib_short(num_bytes: float) -> str:
    """85899345920 → '80 GiB': a whole number of GiB, or one decimal below 10 GiB (a chart label)."""
    return _count(_EXACT.divide(_exact(num_bytes), Decimal(GIB))) + " GiB"


def ms(seconds: float, digits: int = 0) -> str:
    """0.02 → '20 ms'."""
    return _spell(_exact(seconds).scaleb(3), digits) + " ms"


# ---- figures: a value with a unit ---------------------------------------------------------------

# The ladder of units a dimension scales through, smallest first, for each unit system.
_LADDERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("time", ""): ("ns", "µs", "ms", "s"),
    ("bytes", "binary"): ("B", "KiB", "MiB", "GiB", "TiB"),
    ("bytes", "decimal"): ("B", "kB", "MB", "GB", "TB"),
    ("rate", "binary"): ("B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"),
    ("rate", "decimal"): ("B/s", "kB/s", "MB/s", "GB/s", "TB/s"),
}
# How each unit is written after its number; every other unit is a space and its name.
_WRITTEN = {"us": " µs", "x": "x", "%": "%", "count": ""}


def _after(unit_name: str) -> str:
    """What follows a number in ``unit_name``: '%', 'x', ' µs', ' ms', nothing for a count."""
    return _WRITTEN.get(unit_name, " " + unit_name)


_COUNTS = ("count", "ratio", "count_rate")  # dimensions whose whole values are integers


def _in(d: Decimal, from_unit: str, to_unit: str) -> Decimal:
    """``d`` in ``from_unit`` converted to ``to_unit``, exactly (every factor is a power of two
    or of ten), so 8.192 MB is 8.192 MB and not 8.191999999."""
    src, dst = units.convertible(from_unit, to_unit)
    return _EXACT.divide(_EXACT.multiply(d, Decimal(repr(src.factor))), Decimal(repr(dst.factor)))


def _value_text(d: Decimal, unit_name: str) -> str:
    """``d`` (in ``unit_name``) with the dimension's rule and the unit written after it."""
    counted = units.unit(unit_name).dimension in _COUNTS or unit_name == "B"
    decimals = _short_of_all(d, 0) if unit_name == "%" else 0
    if decimals:  # 99.95% measured, not "100%"
        return _spell(d, decimals) + "%"
    return (_count(d) if counted else _number(d)) + _after(unit_name)


def _shown(d: Decimal) -> Decimal:
    """The magnitude a value prints with, which decides whether a bigger unit is due."""
    return abs(_measured(d))


def scales(unit_name: str) -> bool:
    """Whether a value in this unit is written in its dimension's best unit (ns → µs → ms,
    B → KiB → MiB), so that its text names a unit of its own."""
    found = units.unit(unit_name)
    return (found.dimension, found.system) in _LADDERS


def value_text(value: float, unit_name: str, as_unit: str | None = None) -> str:
    """``value`` in ``unit_name`` as a post writes it: in ``as_unit`` if given (the same
    dimension), else in its system's best unit, the first with fewer than 1,000 of them:
    999.7 ns prints as 1.0 µs, never "1,000 ns"."""
    d = _exact(value)
    if as_unit is not None:
        return _value_text(_in(d, unit_name, as_unit), as_unit)
    return _value_text(*_best_unit(d, unit_name))


def _best_unit(d: Decimal, unit_name: str) -> tuple[Decimal, str]:
    """``d`` (in ``unit_name``) in its system's best unit, the first with fewer than 1,000 of
    them (as the value prints, _shown), and that unit; a unit with no ladder stays as it is."""
    found = units.unit(unit_name)
    ladder = _LADDERS.get((found.dimension, found.system))
    if ladder is None:
        return d, unit_name
    for step in ladder[:-1]:
        scaled = _in(d, unit_name, step)
        if _shown(scaled) < 1000:
            return scaled, step
    return _in(d, unit_name, ladder[-1]), ladder[-1]


def tick_text(value: float, unit_name: str) -> str:
    """An axis tick at ``value`` (in ``unit_name``): in the unit value_text would choose, with
    the tick's own digits (precise), not a measurement's rounding: a tick stands at 1,250 ns
    exactly, and reads 1.25 µs, never "1.3 µs"; a round one reads 1 ms, not "1.0 ms"."""
    shown, step = _best_unit(_exact(value), unit_name)
    return precise(float(shown)) + _after(step)


def printed_text(digits: str, unit_name: str) -> str:
    """A number as a lab printed it ('15.6', '1,216.6'), digits kept, with ``unit_name`` written
    after it as a post writes that unit: what a screenshot of the lab's output shows, said in
    its alt text ('15.6x', '237.6 ns') where a post rounds (16x, 238 ns)."""
    return digits + _after(unit_name)


def figure_text(fig: dict[str, Any], as_unit: str | None = None) -> str:
    """A lab figure ({value, unit}) as a post writes it: '92 ns', '8.2 MB', '3.4x', '4' (a count)."""
    return value_text(fig["value"], fig["unit"], as_unit)


def seconds_text(seconds: float) -> str:
    """8.3e-08 → '83 ns', 1.234e-05 → '12 µs', 0.15 → '150 ms', 2.5 → '2.5 s'."""
    return value_text(seconds, "s")


def bytes_text(num_bytes: float) -> str:
    """4096 → '4.0 KiB', 268435456 → '256 MiB': a bare byte count is binary, as the lab counts."""
    return value_text(num_bytes, "B")


# ---- the unit-aware template filters: a figure, or a plain number in base units ------------------


def _figure_or_base(value: Any, dimension: str, base_unit: str) -> tuple[Any, str]:
    """(value, its unit) of a figure of ``dimension``, or of a plain number in ``base_unit``."""
    if isinstance(value, dict):
        units.figure_base(value, dimension)  # the ValueError for a figure of another dimension
        return value["value"], value["unit"]
    return value, base_unit


def duration(value: Any, as_unit: str | None = None) -> str:
    """A time in its best unit: 9.2e-08 (seconds) or {value: 92, unit: ns} → '92 ns'."""
    return value_text(*_figure_or_base(value, "time", "s"), as_unit)


def bytesize(value: Any, as_unit: str | None = None) -> str:
    """A size: 4096 → '4.0 KiB', {value: 8.192, unit: MB} → '8.2 MB' (its own unit system)."""
    return value_text(*_figure_or_base(value, "bytes", "B"), as_unit)


def ratio(numerator: Any, denominator: Any) -> str:
    """How many of one fit in the other: tcp_rtt | ratio(ram_random) → '110' (a count: a whole
    ratio is an integer)."""
    return count(units.ratio_of(numerator, denominator))
