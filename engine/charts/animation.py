"""The slot timeline as an animated GIF for X: static and continuous batching drawn step by step.

Why motion: the still timeline shows the result; the animation shows the cause. Both policies
start together on the same requests and slots; continuous batching refills freed slots and is
done early, while static batching's slots sit grey behind its slowest request.

How it stays small and the same bytes every build:
- 1280 × 720 px: X's largest 16:9 GIF (its limit is 1280 × 1080, engine.platforms.media).
- A few dozen frames sampled evenly over the run, not one per decode step, then the last frame
  held. Should the file ever pass the margin under X's limits (media.GIF_TARGET_BYTES), the
  frames are halved and it is drawn again.
- One palette for every frame (built from the finished picture), no dithering: flat colours
  compress well and never shimmer between frames.
- No timestamps: GIF has no date field, and frames are rendered by Agg from the same numbers.
"""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Any, cast

import numpy as np

from engine.charts import drawcache, labels, style
from engine.charts.policy_comparison import LONG, SHORT, ordered_policies, timeline_fits, title_of
from engine.charts.registry import register_chart
from engine.charts.style import FONT, Size, policy_colour
from engine.outdir import atomic
from engine.platforms import media

SIZE = Size("x_gif", 1280, 720, "x")
FRAMES = 36  # progress frames, sampled evenly over the longest policy's run
MIN_FRAMES = 9  # below this the motion stops reading as motion
FPS = 12  # 36 frames ≈ 3 s of motion
HOLD_MS = 2500  # the finished picture stays up before the loop restarts


@functools.cache
def steady_palette_writer() -> Any:
    """The writer class, made on first use: its base is matplotlib's, and importing this module
    (to register the chart) must not import matplotlib."""
    from matplotlib.animation import PillowWriter

    class SteadyPaletteWriter(PillowWriter):
        """matplotlib's Pillow GIF writer, fed by blitting, with one palette and a held last frame.

        - A frame is the canvas as the caller last blitted it (only the moving artists redrawn over
          a saved background), not a fresh savefig: a whole-figure draw per frame costs ten times
          as much and draws the same axes, ticks and legend every time.
        - PillowWriter lets Pillow quantise each frame on its own: colours drift between frames and
          the file grows. Here every frame is mapped to one palette, that of the finished picture,
          which holds every colour the animation settles on. The caller draws the finished picture
          first (set_palette), so each frame is mapped as it is grabbed and kept as one byte a
          pixel, not four: a build's peak memory is not 36 copies of the canvas.
        - The palette mapper reads the canvas's RGBA bytes in place, a pixel as one 32-bit word,
          and maps only the pixels that changed since the frame before.
        """

        _frames: list[Any]  # PillowWriter's list of frames: here, each frame's palette indices

        def __init__(self, *args: Any, hold_ms: int = 0, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.hold_ms = hold_ms
            self.palette: list[int] | None = None
            self.mapper: PaletteMapper | None = None

        def set_palette(self) -> None:
            """The palette of the canvas as it is now (the finished picture)."""
            from PIL import Image

            finished = np.asarray(cast(Any, self.fig.canvas).buffer_rgba())[..., :3]
            colours = np.array([c for _, c in common_colours(Image.fromarray(finished))], dtype=np.int64)
            self.mapper = PaletteMapper(colours)
            self.palette = colours.astype(np.uint8).ravel().tolist()

        def grab_frame(self, **savefig_kwargs: Any) -> None:
            assert self.mapper is not None, "set_palette comes before the first frame"
            self._frames.append(self.mapper(np.asarray(cast(Any, self.fig.canvas).buffer_rgba())))

        def finish(self) -> None:
            from PIL import Image

            assert self.palette is not None, "set_palette comes before the first frame"
            indexed = []
            for frame in self._frames:
                image = Image.fromarray(frame, mode="P")
                image.putpalette(self.palette)
                indexed.append(image)
            step_ms = int(1000 / self.fps)
            durations = [step_ms] * (len(indexed) - 1) + [step_ms + self.hold_ms]
            gif = io.BytesIO()
            indexed[0].save(
                gif,
                format="gif",
                save_all=True,
                append_images=indexed[1:],
                duration=durations,
                loop=0,
                optimize=False,
                disposal=1,
            )
            atomic.write_bytes(Path(self.outfile), gif.getvalue(), what="animation", durable=False)

    return SteadyPaletteWriter


def common_colours(image: Any, limit: int = 256) -> list[tuple[int, tuple[int, int, int]]]:
    """The picture's most frequent colours, exactly (white stays white, a policy's colour stays
    its colour); ties are broken by the colour itself, so the palette is the same every build."""
    counts = image.getcolors(maxcolors=image.width * image.height)
    return sorted(counts, key=lambda pair: (-pair[0], pair[1]))[:limit]


class PaletteMapper:
    """Each pixel's index in `colours`: the exact colour where it is there, else the nearest.

    Pillow's own mapping to a given palette works at reduced precision (white came out 252).
    Here each distinct colour is matched once, by squared distance, and remembered in a table
    over all 2^24 colours, so later frames (mostly the same colours) cost one lookup a pixel."""

    def __init__(self, colours: np.ndarray):
        self.colours = colours
        self.table = np.zeros(1 << 24, dtype=np.uint8)
        self.known = np.zeros(1 << 24, dtype=bool)
        self.previous: tuple[np.ndarray, np.ndarray] | None = None  # the last frame's codes, indices

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        """`frame` is RGB or RGBA (alpha ignored), height × width × 3 or 4 bytes."""
        if frame.shape[-1] == 4 and frame.dtype == np.uint8 and frame.flags.c_contiguous:
            # One 32-bit read a pixel: the RGBA bytes read as little-endian R | G << 8 | B << 16.
            codes = frame.view("<u4")[..., 0] & 0xFFFFFF
        else:
            codes = (
                frame[..., 0].astype(np.uint32)
                | (frame[..., 1].astype(np.uint32) << 8)
                | (frame[..., 2].astype(np.uint32) << 16)
            )
        previous = self.previous
        if previous is not None and previous[0].shape == codes.shape:
            # Frames differ from the one before only where the bars and titles moved: map those.
            changed = np.flatnonzero(codes != previous[0])
            indexed = previous[1].copy()
            indexed.flat[changed] = self._lookup(codes.flat[changed])
        else:
            indexed = self._lookup(codes)
        self.previous = (codes, indexed)
        return indexed

    def _lookup(self, codes: np.ndarray) -> np.ndarray:
        new = np.unique(codes[~self.known[codes]])
        if new.size:
            rgb = np.stack([new & 255, (new >> 8) & 255, (new >> 16) & 255], axis=1).astype(np.int64)
            self.table[new] = np.argmin(
                ((rgb[:, None, :] - self.colours[None, :, :]) ** 2).sum(axis=2), axis=1
            )
            self.known[new] = True
        return self.table[codes]


def _shown(results: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    batching = labels.section(results, "batching", "slot_timeline_animation")
    shown = [
        (n, p) for n, p in ordered_policies(batching) if n in ("static", "continuous") and p.get("timeline")
    ]
    if not shown:
        raise ValueError(
            "chart 'slot_timeline_animation' needs a per-request timeline for static or continuous"
        )
    return batching, shown


def sample_steps(horizon: int, frames: int = FRAMES) -> list[int]:
    """The decode steps the frames show: evenly spaced from 0 to the end of the longest run."""
    return sorted({int(round(x)) for x in np.linspace(0, horizon, frames)})


@register_chart("slot_timeline_animation", needs=("batching",), size="x", check=timeline_fits, animated=True)
def slot_timeline_animation(results: dict[str, Any], out_dir: Path) -> tuple[Path, str, Size]:
    """Write out_dir/slot_timeline_animation.gif; return (path, alt text, size)."""
    batching, shown = _shown(results)
    path = Path(out_dir) / "slot_timeline_animation.gif"
    budget = media.GIF_TARGET_BYTES
    digest = drawcache.key(
        "slot_timeline_animation",
        batching,
        [policy_colour(name) for name, _ in shown],  # the registry's, not part of results
        [SIZE.width, SIZE.height, FRAMES, FPS, HOLD_MS, budget],
    )
    if drawcache.recall(digest, out_dir, [path.name]) is None:
        frames = FRAMES
        with style.theme():
            _draw(batching, shown, path, frames)
            while path.stat().st_size > budget and frames > MIN_FRAMES:  # over the margin: fewer frames
                frames = max(MIN_FRAMES, frames // 2)
                _draw(batching, shown, path, frames)
        drawcache.keep(digest, out_dir, [path.name])
    return path, _alt(batching, shown), SIZE


def _draw(batching: dict[str, Any], shown: list[tuple[str, dict[str, Any]]], path: Path, frames: int) -> None:
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    slots = int(batching["slots"])
    horizon = max(int(p["steps"]) for _, p in shown)
    lengths = np.concatenate(
        [np.subtract(p["timeline"]["end_step"], p["timeline"]["start_step"]) for _, p in shown]
    )
    long_from = 4 * float(np.median(lengths))
    fig = style.new_figure(SIZE)
    top, gap = 0.80, 0.13
    height = (top - 0.2 - gap * (len(shown) - 1)) / len(shown)
    panels = []
    for i, (name, pol) in enumerate(shown):
        ax = fig.add_axes((0.05, top - (i + 1) * height - i * gap, 0.93, height))
        tl = pol["timeline"]
        start = np.asarray(tl["start_step"], dtype=float)
        end = np.asarray(tl["end_step"], dtype=float)
        slot = np.asarray(tl["slot"], dtype=float)
        is_long = (end - start) > long_from
        idle = PolyCollection([], facecolors=style.LIGHT_GREY, edgecolors="none")
        bars = {
            colour: PolyCollection([], facecolors=colour, edgecolors="white", linewidths=0.4)
            for colour in (SHORT, LONG)
        }
        ax.add_collection(idle)
        for coll in bars.values():
            ax.add_collection(coll)
        now = ax.axvline(0, color=style.INK, linewidth=1.6)
        ax.set_xlim(0, horizon * 1.005)
        ax.set_ylim(0, slots)
        ax.set_yticks([])
        ax.set_ylabel(f"{slots} slots")
        style.thousands_ticks(ax.xaxis)
        if i == len(shown) - 1:
            ax.set_xlabel("decode step")
        else:
            ax.tick_params(labelbottom=False)
        title = ax.set_title("", fontsize=FONT["base"] + 2, color=policy_colour(name), pad=6)
        panels.append((name, pol, start, end, slot, is_long, idle, bars, now, title))
    handles = [
        Patch(color=SHORT, label="short request"),
        Patch(color=LONG, label="long request"),
        Patch(color=style.LIGHT_GREY, label="idle slot"),
    ]
    fig.legend(
        handles=handles,
        loc="lower right",
        bbox_to_anchor=(0.995, 0.0),
        ncol=3,
        handlelength=1.2,
        columnspacing=1.0,
    )
    style.heading(fig, "Same requests, same slots: who is still working?")
    style.source_note(fig, labels.batching_source(batching))

    def rects(x0: np.ndarray, x1: np.ndarray, y: np.ndarray) -> Any:
        """The bars as one (n, 4, 2) array: PolyCollection builds its paths from an array in one
        pass, where a list of small arrays costs a Path validation per bar per frame (Any: the
        stubs of set_verts name only sequences, though it takes the array first)."""
        low, high = y + 0.06, y + 0.94
        return np.stack(
            [
                np.stack([x0, low], axis=1),
                np.stack([x1, low], axis=1),
                np.stack([x1, high], axis=1),
                np.stack([x0, high], axis=1),
            ],
            axis=1,
        ).astype(float)

    def update(panel: tuple[Any, ...], t: int) -> list[Any]:
        """Set the panel's moving artists to decode step t (at most its run's last: then it is
        done) and return them."""
        name, pol, start, end, slot, is_long, idle, bars, now, title = panel
        steps = int(pol["steps"])
        idle.set_verts(rects(np.zeros(slots), np.full(slots, float(t)), np.arange(slots)))
        begun = start < t
        for colour, mask in ((SHORT, begun & ~is_long), (LONG, begun & is_long)):
            bars[colour].set_verts(rects(start[mask], np.minimum(end[mask], t), slot[mask]))
        now.set_xdata([t, t])
        done = int(np.sum(end <= t))
        if t >= steps:
            title.set_text(f"{title_of(name)}: done at step {steps:,}, {style.pct(pol['utilisation'])} busy")
        else:
            title.set_text(f"{title_of(name)}: step {t:,}, {done:,} of {len(end):,} requests done")
        return [idle, *bars.values(), now, title]

    moving = [a for panel in panels for a in (panel[6], *panel[7].values(), panel[8], panel[9])]
    for artist in moving:
        artist.set_animated(True)  # left out of the full draw: the background holds the rest
    writer = steady_palette_writer()(fps=FPS, hold_ms=HOLD_MS)
    with writer.saving(fig, path, SIZE.dpi):
        canvas = cast(Any, fig.canvas)  # Agg: the blitting methods
        canvas.draw()
        background = canvas.copy_from_bbox(fig.bbox)
        stamps = [Stamp(fig) for _ in panels]

        def show(step: int) -> None:
            """The canvas at decode step ``step``: the background, each panel in its state."""
            canvas.restore_region(background)
            for panel, stamp in zip(panels, stamps):
                t = min(step, int(panel[1]["steps"]))  # the panel's state: done once t is its last
                stamp.draw(t, lambda p=panel, t=t: update(p, t))

        steps = sample_steps(horizon, frames)
        show(steps[-1])  # the finished picture first: its colours are the palette
        writer.set_palette()
        for step in steps:
            show(step)
            writer.grab_frame()


class Stamp:
    """One panel's moving artists, drawn once per state and pasted while the state holds.

    A finished run (continuous batching, from about a fifth of the way in) looks the same in
    every later frame, yet drawing it again costs its bars and, mostly, its title's glyphs.
    The pixels the artists drew are kept with the pixels they were drawn over: when the next
    frame asks for the same state over the same pixels, Agg would draw the same bytes, so they
    are pasted instead. Only the last state is kept (a few megabytes, not one copy per frame).
    The region is the artists' extent with a margin; that they draw nowhere else is tested.
    """

    MARGIN_PX = 4

    def __init__(self, fig: Any) -> None:
        self.fig = fig
        self.last: tuple[Any, tuple[int, int, int, int], np.ndarray, np.ndarray] | None = None
        self.pasted = 0  # frames whose panel was pasted, not drawn (the test reads it)

    def region(self, artists: list[Any]) -> tuple[int, int, int, int]:
        """(top, bottom, left, right) rows and columns of the canvas that hold the artists."""
        from matplotlib.transforms import Bbox

        renderer = self.fig.canvas.get_renderer()
        box = Bbox.union(
            [
                a.get_clip_box()
                if a.get_clip_on() and a.get_clip_box() is not None
                else a.get_window_extent(renderer)
                for a in artists
            ]
        )  # a clipped artist draws inside its clip box (the axes), a title where its text is
        height, width = int(self.fig.bbox.height), int(self.fig.bbox.width)
        m = self.MARGIN_PX
        return (
            max(0, int(np.floor(height - box.y1)) - m),
            min(height, int(np.ceil(height - box.y0)) + m),
            max(0, int(np.floor(box.x0)) - m),
            min(width, int(np.ceil(box.x1)) + m),
        )

    def draw(self, state: Any, update: Any) -> None:
        """Draw the artists `update()` sets to `state` (and returns), or paste them."""
        pixels = np.asarray(self.fig.canvas.buffer_rgba())
        last = self.last
        if last is not None and last[0] == state:
            top, bottom, left, right = last[1]
            if np.array_equal(pixels[top:bottom, left:right], last[2]):
                pixels[top:bottom, left:right] = last[3]
                self.pasted += 1
                return
        artists = update()
        box = self.region(artists)
        top, bottom, left, right = box
        before = pixels[top:bottom, left:right].copy()
        for artist in artists:
            self.fig.draw_artist(artist)
        self.last = (state, box, before, pixels[top:bottom, left:right].copy())


def _alt(batching: dict[str, Any], shown: list[tuple[str, dict[str, Any]]]) -> str:
    pols = dict(shown)
    sentences = [f"Animated slot timeline, {labels.batching_source(batching)}."]
    if "continuous" in pols:
        p = pols["continuous"]
        sentences.append(
            f"Continuous batching refills freed slots and is done at step {p['steps']:,} "
            f"({style.pct(p['utilisation'])} busy)."
        )
    if "static" in pols:
        p = pols["static"]
        sentences.append(
            f"Static batching idles behind its slowest request until step {p['steps']:,} "
            f"({style.pct(p['utilisation'])} busy)."
        )
    return style.fit_alt(sentences)
