"""The animation's shortcuts draw what plain matplotlib draws: pasted panels and palette indices
mapped only where a frame changed give the same pixels, and so the same GIF bytes, as drawing and
mapping everything every frame (the reference here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PolyCollection

from engine.charts import animation, style


def _panel_figure() -> tuple[Any, Any, list[Any]]:
    """A small figure with one panel's kind of moving artists: clipped bars, a line, a title."""
    fig = style.new_figure(animation.SIZE)
    ax = fig.add_axes((0.1, 0.2, 0.8, 0.6))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4)
    bars = PolyCollection([], facecolors="tab:blue", edgecolors="white", linewidths=0.4)
    ax.add_collection(bars)
    now = ax.axvline(0, color="black", linewidth=1.6)
    title = ax.set_title("", fontsize=20, pad=6)
    for artist in (bars, now, title):
        artist.set_animated(True)
    return fig, ax, [bars, now, title]


def _set(artists: list[Any], t: float) -> list[Any]:
    bars, now, title = artists
    # A bar runs past the right edge (clipped) and the title is long: both must stay inside the
    # region the stamp keeps.
    bars.set_verts([np.array([[0, 1], [t * 3, 1], [t * 3, 2], [0, 2]], dtype=float)])
    now.set_xdata([t, t])
    title.set_text(f"Static batching: step {t:,.0f}, {t:.0f} of 200 requests done (gjpqy)")
    return artists


def test_a_stamped_panel_is_pixel_for_pixel_the_drawn_one() -> None:
    with style.theme():
        fig, _, artists = _panel_figure()
        canvas = fig.canvas
        canvas.draw()
        background = canvas.copy_from_bbox(fig.bbox)
        clean = np.array(canvas.buffer_rgba())

        def plain(t: float) -> np.ndarray:  # the reference: every artist drawn, nothing pasted
            canvas.restore_region(background)
            for artist in _set(artists, t):
                fig.draw_artist(artist)
            return np.array(canvas.buffer_rgba())

        stamp = animation.Stamp(fig)

        def stamped(t: float) -> np.ndarray:
            canvas.restore_region(background)
            stamp.draw(t, lambda: _set(artists, t))
            return np.array(canvas.buffer_rgba())

        frames = [stamped(t) for t in (2.0, 5.0, 5.0, 5.0, 7.0)]
        assert stamp.pasted == 2  # the repeated state was pasted, not drawn
        for t, frame in zip((2.0, 5.0, 5.0, 5.0, 7.0), frames):
            assert np.array_equal(frame, plain(t)), t
        # The region kept covers every pixel the artists change (the stamp's one assumption).
        top, bottom, left, right = stamp.region(_set(artists, 7.0))
        changed = np.argwhere((plain(7.0) != clean).any(axis=2))
        assert changed.size
        assert (changed[:, 0] >= top).all() and (changed[:, 0] < bottom).all()
        assert (changed[:, 1] >= left).all() and (changed[:, 1] < right).all()


def test_a_stamp_draws_again_over_different_pixels() -> None:
    """Same state, different pixels under it (another panel drew there): drawn, not pasted."""
    with style.theme():
        fig, _, artists = _panel_figure()
        canvas = fig.canvas
        canvas.draw()
        background = canvas.copy_from_bbox(fig.bbox)
        stamp = animation.Stamp(fig)
        canvas.restore_region(background)
        stamp.draw(3.0, lambda: _set(artists, 3.0))
        canvas.restore_region(background)
        np.asarray(canvas.buffer_rgba())[300:310, 300:310] = 7  # under the bars
        stamp.draw(3.0, lambda: _set(artists, 3.0))
        assert stamp.pasted == 0


def test_palette_mapping_of_changed_pixels_equals_mapping_every_pixel() -> None:
    rng = np.random.default_rng(7)
    colours = rng.integers(0, 256, size=(12, 3)).astype(np.int64)
    frame = colours[rng.integers(0, 12, size=(40, 60))].astype(np.uint8)
    frames = []
    for k in range(6):
        frame = frame.copy()
        frame[k * 5 : k * 5 + 7, 10 : 10 + 3 * k] = rng.integers(0, 256, size=3)  # off-palette
        frames.append(np.concatenate([frame, np.full((40, 60, 1), 255, np.uint8)], axis=2))
    incremental = animation.PaletteMapper(colours)
    for rgba in frames:
        fresh = animation.PaletteMapper(colours)(rgba[..., :3])  # RGB, no history: every pixel
        nearest = np.argmin(((rgba[..., None, :3].astype(np.int64) - colours) ** 2).sum(axis=-1), axis=-1)
        assert np.array_equal(incremental(rgba), fresh)
        assert np.array_equal(fresh, nearest)


FRAMES = 4


def test_the_gif_is_the_same_bytes_without_the_shortcuts(
    built_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short animation drawn with stamps, then with a stamp that never pastes: same bytes.
    FRAMES frames (the start, two moments and the end) are enough for every path: bars grown,
    a panel still running, and a finished panel pasted."""
    results = json.loads((built_out / "day37" / "results.json").read_text())
    batching, shown = animation._shown(results)
    made: list[animation.Stamp] = []

    class Counted(animation.Stamp):
        def __init__(self, fig: Any) -> None:
            super().__init__(fig)
            made.append(self)

    class DrawsAlways(animation.Stamp):
        def draw(self, state: Any, update: Any) -> None:
            for artist in update():
                self.fig.draw_artist(artist)

    with style.theme():
        monkeypatch.setattr(animation, "Stamp", Counted)
        animation._draw(batching, shown, tmp_path / "stamped.gif", FRAMES)
        monkeypatch.setattr(animation, "Stamp", DrawsAlways)
        animation._draw(batching, shown, tmp_path / "drawn.gif", FRAMES)
    assert sum(s.pasted for s in made) > 0  # continuous batching's finished panel was pasted
    assert (tmp_path / "stamped.gif").read_bytes() == (tmp_path / "drawn.gif").read_bytes()


def test_frames_are_kept_as_indices_into_the_finished_pictures_colours(
    built_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each frame is kept as one palette index a pixel (not the canvas's four bytes), and the
    palette is the most common colours of the last frame, as that frame was on the canvas."""
    from PIL import Image

    results = json.loads((built_out / "day37" / "results.json").read_text())
    batching, shown = animation._shown(results)
    writer = animation.steady_palette_writer()
    seen: dict[str, Any] = {}
    grab, finish = writer.grab_frame, writer.finish

    def grab_and_look(self: Any, **kwargs: Any) -> None:
        seen["canvas"] = np.array(self.fig.canvas.buffer_rgba())[..., :3]  # this frame, as drawn
        grab(self, **kwargs)

    def finish_and_look(self: Any) -> None:
        seen["frames"], seen["palette"] = list(self._frames), list(self.palette)
        finish(self)

    monkeypatch.setattr(writer, "grab_frame", grab_and_look)
    monkeypatch.setattr(writer, "finish", finish_and_look)
    with style.theme():
        animation._draw(batching, shown, tmp_path / "a.gif", FRAMES)
    height, width = animation.SIZE.height, animation.SIZE.width
    assert len(seen["frames"]) == FRAMES
    assert all(f.dtype == np.uint8 and f.shape == (height, width) for f in seen["frames"])
    last = Image.fromarray(seen["canvas"])
    assert seen["palette"] == [v for _, c in animation.common_colours(last) for v in c]
    colours = np.array(seen["palette"], dtype=np.uint8).reshape(-1, 3)
    with Image.open(tmp_path / "a.gif") as gif:  # the file shows those indices in that palette
        gif.seek(FRAMES - 1)
        assert np.array_equal(np.asarray(gif.convert("RGB")), colours[seen["frames"][-1]])
