"""Charts: a registry of named chart functions and one ``draw`` that writes PNG + alt text.

A chart function turns the results dict into a figure at an exact platform size and an alt
text generated from the same numbers, so the picture and its description cannot drift apart.
``draw`` saves both beside the drafts (``<name>.png``, ``<name>.alt.txt``) and checks the alt
text against the platform's limit before anything is posted.

Importing this package imports matplotlib (Agg); the build imports it only when it draws.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from engine.charts import batching, kv, pareto, queueing, scoreboard, style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ChartFn = Callable[..., tuple["Figure", str]]  # (results, size=None) -> (figure, alt text)

# Alt-text limits: X allows 1,000 characters; LinkedIn's is undocumented, 250 is the safe default.
ALT_LIMITS = {"x": 1000, "linkedin": 250}


@dataclass(frozen=True)
class ChartFile:
    """A drawn chart on disk, as the pipeline records it in results['charts']."""

    name: str
    path: Path
    alt_text: str
    width: int
    height: int
    platform: str  # 'x' or 'linkedin'

    def to_dict(self) -> dict[str, Any]:
        """The results.json entry; 'file' is relative to the day's folder."""
        return {
            "name": self.name,
            "file": self.path.name,
            "alt_text": self.alt_text,
            "width": self.width,
            "height": self.height,
            "platform": self.platform,
        }


CHARTS: dict[str, ChartFn] = {
    "scoreboard": scoreboard.scoreboard,
    "kv_fit": kv.kv_fit,
    "memory_breakdown": kv.memory_breakdown,
    "slot_timeline": batching.slot_timeline,
    "utilisation": batching.utilisation,
    "latency_cdf": batching.latency_cdf,
    "kv_blocks": batching.kv_blocks,
    "queue_hockey_stick": queueing.queue_hockey_stick,
    "shared_vs_separate": queueing.shared_vs_separate,
    "pareto": pareto.pareto,
    "cheapest_table": pareto.cheapest_table,
}

# The size each chart is drawn at unless the caller asks for another (style.SIZES keys).
DEFAULT_SIZE: dict[str, str] = {
    "scoreboard": "x",
    "kv_fit": "linkedin",
    "memory_breakdown": "linkedin",
    "slot_timeline": "x",
    "utilisation": "linkedin",
    "latency_cdf": "linkedin",
    "kv_blocks": "linkedin",
    "queue_hockey_stick": "linkedin",
    "shared_vs_separate": "linkedin",
    "pareto": "x",
    "cheapest_table": "linkedin",
}


def draw(name: str, results: dict[str, Any], out_dir: Path, size: str | None = None) -> ChartFile:
    """Draw chart `name` into out_dir/<name>.png and out_dir/<name>.alt.txt.

    `size` (a style.SIZES key) overrides the chart's default; the file is then
    ``<name>-<size>.png`` so both renders can sit side by side.
    """
    if name not in CHARTS:
        raise ValueError(f"unknown chart '{name}'; known: {', '.join(sorted(CHARTS))}")
    key = size or DEFAULT_SIZE[name]
    if key not in style.SIZES:
        raise ValueError(f"unknown size '{key}'; known: {', '.join(style.SIZES)}")
    stem = name if key == DEFAULT_SIZE[name] else f"{name}-{key}"
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with style.theme():
        fig, alt = CHARTS[name](results, size=style.SIZES[key])
        drawn = style.size_of(fig)
        _check_alt(name, alt)
        path = out_dir / f"{stem}.png"
        style.save_png(fig, path)
    (out_dir / f"{stem}.alt.txt").write_text(alt + "\n", encoding="utf-8")
    return ChartFile(name, path, alt, drawn.width, drawn.height, drawn.platform)


def _check_alt(name: str, alt: str) -> None:
    """Alt text is generated, so a failure here is a bug in the chart, not the user's spec."""
    limit = min(ALT_LIMITS.values())  # one text that fits both platforms
    if not alt.strip():
        raise ValueError(f"chart '{name}' produced no alt text")
    if len(alt) > limit:
        raise ValueError(f"chart '{name}' alt text is {len(alt)} characters, over {limit}")
