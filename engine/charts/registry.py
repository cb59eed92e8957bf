"""The chart registry: a chart registers beside its function, with what it needs.

A registration holds the chart's name (what a spec lists under ``charts:``), the spec sections
whose results it draws from, the size it is drawn at unless asked for another (a
``style.SIZES`` key), the draw function ``(results, size=None) -> (figure, alt text)`` and,
optionally, a further check on the spec (``kv_blocks`` needs a block-keeping policy). The spec's valid
chart names, its "chart needs a section" rule and the pipeline's drawing all read this one
table, so a new chart is one decorated function in a module of engine/charts (or a test file).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.registry import Registry

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# (results, size=None) -> (figure, alt text); an animation: (results, out_dir) -> (path, alt, size)
DrawFn = Callable[..., Any]
SpecCheck = Callable[[Any], "str | None"]  # DaySpec -> a problem ("needs a policy that keeps KV blocks")
# results -> why the chart cannot be drawn from them (a measurement not made yet), or None
ResultsCheck = Callable[[dict[str, Any]], "str | None"]


@dataclass(frozen=True)
class Chart:
    name: str
    draw: DrawFn
    needs: tuple[str, ...]
    size: str
    check: SpecCheck | None = None
    # An animation writes its own file: draw(results, out_dir) -> (path, alt text, style.Size).
    animated: bool = False
    # A chart of an optional input (a measurement): the build skips it, with a warning, when
    # this gives a reason, instead of failing a day that is complete without it.
    drawn_when: ResultsCheck | None = None
    # The results it draws in the shared chart tests (its sections' parts): a chart of sections
    # the tests' own lab results do not hold brings its sample, so the house's rules (sizes,
    # alt text, type sizes, colours, nothing off the image) are checked on it too.
    example: Callable[[], dict[str, Any]] | None = None

    def unavailable(self, results: dict[str, Any]) -> str | None:
        return self.drawn_when(results) if self.drawn_when is not None else None

    def __call__(self, results: dict[str, Any], size: Any = None) -> tuple[Figure, str]:
        """Draw the figure: a registered chart is called as its function is."""
        return self.draw(results, size=size)


# Every chart, discovered in engine/charts (engine.registry says how).
CHARTS: Registry[Chart] = Registry("chart", "engine.charts", name_of=lambda c: c.name)


def register_chart(
    name: str,
    *,
    needs: tuple[str, ...],
    size: str,
    check: SpecCheck | None = None,
    animated: bool = False,
    drawn_when: ResultsCheck | None = None,
    example: Callable[[], dict[str, Any]] | None = None,
) -> Callable[[DrawFn], DrawFn]:
    """Decorator: register the function as chart ``name`` (a name another module took is
    refused); the function is returned unchanged."""

    def register(fn: DrawFn) -> DrawFn:
        CHARTS.add(
            Chart(name, fn, tuple(needs), size, check, animated, drawn_when, example), origin=fn.__module__
        )
        return fn

    return register


def unregister_chart(name: str) -> None:
    """Remove a registration (for tests that register a toy chart)."""
    CHARTS.remove(name)


def names() -> list[str]:
    """Every registered chart name, the built-in charts included."""
    return CHARTS.names()


def get(name: str) -> Chart:
    return CHARTS.get(name)
