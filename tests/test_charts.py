"""Charts: exact platform pixels, same bytes twice, alt text from the numbers, source labels,
phone-sized fonts, colour-blind-safe colours, and pictures that show what they claim.

The fixture is a Day 37 results dict of the shape the pipeline writes, with the lab's numbers.
The batching timelines come from a deliberately naive replay of the lab's workload written here
(a few lines, independent of engine.batching), so the slot picture is checked against ground
truth: 5,797 static steps, 1,148 continuous steps, 13,280 busy slot-steps.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from sweep_fixture import sweep_results

from engine import charts
from engine.charts import drawcache, style

from helpers import syntax_tree

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30
SLOTS = 16
CONTEXTS = [512, 1024, 2048, 4096, 8192, 16384, 32768]
BYTES_PER_TOKEN = 2 * 32 * 32 * 128 * 2  # K and V × layers × KV heads × head dim × fp16


def lab_lengths() -> list[int]:
    """The lab's 200 output lengths; a seeded stand-in if the workload file is not there."""
    path = ROOT / "days" / "day37.workload.csv"
    if path.exists():
        return [int(v) for v in path.read_text().split()[1:]]
    import random

    rng = random.Random(37)
    return [rng.randint(400, 700) if rng.random() < 0.1 else rng.randint(8, 40) for _ in range(200)]


def naive_static(lengths: list[int], slots: int) -> dict:
    """Groups of `slots` in arrival order; a group lasts as long as its longest request."""
    slot, start, end, maxima, t = [], [], [], [], 0
    for g in range(0, len(lengths), slots):
        group = lengths[g : g + slots]
        for i, n in enumerate(group):
            slot.append(i), start.append(t), end.append(t + n)
        maxima.append(max(group))
        t += max(group)
    return {
        "steps": t,
        "group_maxima": maxima,
        "timeline": {"slot": slot, "start_step": start, "end_step": end},
    }


def naive_continuous(lengths: list[int], slots: int) -> dict:
    """Each step: fill free slots FIFO, every running request emits a token, finished leave."""
    free_at = [0] * slots
    slot, start, end = [], [], []
    for n in lengths:
        s = min(range(slots), key=lambda i: (free_at[i], i))
        slot.append(s), start.append(free_at[s]), end.append(free_at[s] + n)
        free_at[s] += n
    return {"steps": max(end), "timeline": {"slot": slot, "start_step": start, "end_step": end}}


def _policy(sim: dict, tokens: int, slots: int) -> dict:
    steps = sim["steps"]
    latencies = sorted(sim["timeline"]["end_step"])  # everyone arrives at step 0
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    return {
        **sim,
        "utilisation": tokens / (steps * slots),
        "throughput_tokens_per_step": tokens / steps,
        "makespan_seconds": steps * 0.02,
        "requests_per_second": len(latencies) / (steps * 0.02),
        "e2e": {"p50": pick(0.5), "p90": pick(0.9), "p99": pick(0.99)},
    }


def _view(label: str, gpu_gib: int, kv_gib: float, weights_gib: float, act_gib: float) -> dict:
    kv_bytes = int(kv_gib * GIB)
    num_blocks = kv_bytes // (16 * BYTES_PER_TOKEN)
    rows = []
    for c in CONTEXTS:
        blocks = -(-c // 16)
        rows.append(
            {
                "context": c,
                "blocks_per_request": blocks,
                "bytes_per_request": c * BYTES_PER_TOKEN,
                "max_requests": num_blocks // blocks,
            }
        )
    total = gpu_gib * GIB
    used = int((weights_gib + act_gib) * GIB) + kv_bytes
    return {
        "label": label,
        "model": {"name": "7B-class", "num_layers": 32},
        "gpu": {"name": "H100", "memory_bytes": total},
        "plan": {
            "bytes_per_token": BYTES_PER_TOKEN,
            "kv_memory_bytes": kv_bytes,
            "block_size": 16,
            "num_blocks": num_blocks,
            "kv_tokens": num_blocks * 16,
            "contexts": rows,
            "breakdown": {
                "total_bytes": total,
                "weights_bytes": int(weights_gib * GIB),
                "activation_and_overhead_bytes": int(act_gib * GIB),
                "kv_cache_bytes": kv_bytes,
                "unused_bytes": total - used,
            },
        },
    }


def _mm1_row(rho: float, mean: float) -> dict:
    closed = 10 / (1 - rho)
    return {
        "utilisation": rho,
        "mean_time_in_system_ms": mean,
        "p99_time_in_system_ms": 4.6 * mean,
        "closed_form_mean_ms": closed,
    }


def _wait_row(mean: float, p99: float) -> dict:
    return {"mean_wait_ms": mean, "p99_wait_ms": p99, "mean_sojourn_ms": mean + 10}


# Day 37's own title ("LLM serving is a queueing problem with a GPU in the middle", which the
# session's build draws) and more: every figure the tests here read has a title that must be fitted.
LONG_TITLE = "LLM serving is a queueing problem with a GPU in the middle, and more words"


def day37_results() -> dict:
    """Results of the shape the pipeline writes, with the lab's numbers (and a long title)."""
    lengths = lab_lengths()
    tokens = sum(lengths)
    static = _policy(naive_static(lengths, SLOTS), tokens, SLOTS)
    continuous = _policy(naive_continuous(lengths, SLOTS), tokens, SLOTS)
    paged = copy.deepcopy(continuous)
    tl = paged["timeline"]
    steps = list(range(paged["steps"]))
    blocks = [
        sum(-(-(t - s + 1) // 16) for s, e in zip(tl["start_step"], tl["end_step"]) if s <= t < e)
        for t in steps
    ]
    paged["kv_blocks_used"] = {"step": steps, "blocks": blocks, "num_blocks": 1024}
    return {
        "day": 37,
        "title": LONG_TITLE,
        "series": {"name": "60 days of system design", "length": 60},
        "repository": "github.com/anurag629/system-design-60-days",
        "hashtags": ["SystemDesign", "LLM"],
        "kv_cache": {
            "source": "calculated",
            "main": _view("7B-class on an 80 GiB GPU, 16 GiB reserved", 80, 64, 14, 2),
            "compare": [_view("vLLM accounting, 90% of the card", 80, 58, 12.55, 1.45)],
            "highlight": [2048, 8192],
            "halves_when_context_doubles": True,  # the engine's verdict (experiments.kv_cache)
        },
        "batching": {
            "source": "simulated",
            "slots": SLOTS,
            "workload": {"requests": len(lengths), "total_output_tokens": tokens, "longest": max(lengths)},
            "policies": {"static": static, "continuous": continuous, "paged": paged},
            "multiple": static["steps"] / continuous["steps"],
            "ideal_steps": max(-(-tokens // SLOTS), max(lengths)),
        },
        "queueing": {
            "source": "simulated",
            "mm1": [
                _mm1_row(r, m)
                for r, m in [
                    (0.5, 19.9),
                    (0.7, 33.5),
                    (0.8, 50.2),
                    (0.9, 98.1),
                    (0.95, 221.4),
                    (0.99, 1223.7),
                ]
            ],
            "lines": {
                "servers": 2,
                "load": 0.9,
                "shared": _wait_row(42.6, 222.3),
                "separate_random": _wait_row(90.1, 450.2),
                "separate_round_robin": _wait_row(61.0, 318.0),
                "wait_ratio": 2.1,
            },
        },
        "lab": _lab(),
        "sweep": sweep_results(),
        "measured": _measured(),
    }


def _measured() -> dict:
    """The committed H200 measurement as engine.inputs.measured_result shapes it."""
    from helpers import DAYS

    doc = json.loads((DAYS / "day37.measured" / "nvidia-h200.json").read_text())
    return {
        "file": "day37.measured/nvidia-h200.json",
        "source": f"measured on {doc['device']['name']}",
        **doc,
    }


def _lab() -> dict:
    """A lab's results as engine.experiments.lab.results.run shapes them: a transcript and two figures."""
    source = "measured on Test CPU, 2 cores"
    figures = {
        "ram_random": {
            "value": 92.0,
            "unit": "ns",
            "label": "RAM, random read",
            "about": "a load",
            "source": source,
            "text": "92 ns",
        },
        "tcp_round_trip": {
            "value": 11.0,
            "unit": "us",
            "label": "TCP round trip",
            "about": "a trip",
            "source": source,
            "text": "11 µs",
        },
    }
    text = "".join(f"step {i}: done\n" for i in range(30)) + "RAM 92 ns\nTCP 11 us\n"
    return {
        "source": source,
        "when": "2026-01-31 12:00 UTC",
        "lab_folder": "day01.lab",
        "command": "python lab.py",
        "stale": False,
        "stale_message": None,
        "machine": {"name": "Test CPU, 2 cores", "os": "Linux", "kernel": "6.1.0"},
        "transcript": {"text": text, "lines": 32, "truncated": False},
        "terminal": {},
        "table": ["ram_random", "tcp_round_trip"],
        "figures": figures,
        "reference": {
            "source": {
                "short": "Dean and Norvig (~2012)",
                "year": 2012,
                "url": "https://gist.github.com/jboner/2841832",
            },
            "compare": {"ram_random": {"value": 100, "unit": "ns", "text": "100 ns"}},
        },
    }


@pytest.fixture(scope="module")
def results() -> dict:
    return day37_results()


@pytest.fixture(scope="module")
def drawn(results: dict, tmp_path_factory: pytest.TempPathFactory) -> dict[str, charts.ChartFile]:
    # Still charts only: the animation writes a GIF of its own, checked in test_formats.
    out = tmp_path_factory.mktemp("charts")
    return {name: _draw_from_scratch(name, results, out) for name in _still()}


@pytest.fixture(scope="module")
def portrait(results: dict, tmp_path_factory: pytest.TempPathFactory) -> charts.ChartFile:
    """The scoreboard at LinkedIn's portrait size, drawn like ``drawn``."""
    return _draw_from_scratch("scoreboard", results, tmp_path_factory.mktemp("portrait"), "linkedin_portrait")


def _draw_from_scratch(name: str, results: dict, out: Path, size: str | None = None) -> charts.ChartFile:
    """charts.draw as a build calls it, from scratch (not copied from the drawing cache), so
    the bytes tests can compare a second draw with this one. The figure it saved, laid out and
    rasterised by that draw, is the one _built returns for these results and size: a figure is
    built and laid out once in this module, not once more for the tests that read it."""
    results = _sample(name, results)
    kept = []
    png_bytes = style.png_bytes

    def save_and_keep(fig) -> bytes:
        kept.append(fig)
        return png_bytes(fig)

    with drawcache.fresh(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(style, "png_bytes", save_and_keep)
        chart = charts.draw(name, results, out, size=size)
    (_FIGURES[_figure_key(name, results, size)],) = kept
    return chart


def _still() -> list[str]:
    """The registered charts drawn as one still figure (the animation has tests of its own)."""
    return [name for name, chart in charts.CHARTS.items() if not chart.animated]


def _sample(name: str, results: dict) -> dict:
    """What chart ``name`` is drawn from here: this module's lab results where they hold every
    section it needs, else the sample it was registered with (its sections' parts beside the
    module's day, title and series). A chart with neither cannot be held to the rules below."""
    chart = charts.CHARTS[name]
    if all(need in results for need in chart.needs):
        return results
    assert chart.example is not None, (
        f"chart {name!r} needs {', '.join(chart.needs)}, which the tests' results do not hold: "
        "register it with an example (register_chart(..., example=...))"
    )
    return {**results, **chart.example()}


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, payload) of every chunk, checking each CRC: a minimal PNG reader."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body)
        chunks.append((kind, body))
        pos += 12 + length
    return chunks


# ---- the fixture is the lab's run ------------------------------------------------------------


def test_fixture_reproduces_the_lab_run(results: dict) -> None:
    if not (ROOT / "days" / "day37.workload.csv").exists():
        pytest.skip("days/day37.workload.csv not in this checkout")
    b = results["batching"]
    assert b["policies"]["static"]["steps"] == 5797
    assert b["policies"]["continuous"]["steps"] == 1148
    assert round(b["policies"]["static"]["utilisation"] * 100, 1) == 14.3
    assert round(b["policies"]["continuous"]["utilisation"] * 100, 1) == 72.3
    assert [r["max_requests"] for r in results["kv_cache"]["main"]["plan"]["contexts"]] == [
        256,
        128,
        64,
        32,
        16,
        8,
        4,
    ]


# ---- files: sizes, bytes, alt text -----------------------------------------------------------


def test_every_chart_is_at_its_platform_size(drawn: dict[str, charts.ChartFile]) -> None:
    allowed = {(1600, 900, "x"), (1200, 627, "linkedin"), (1080, 1350, "linkedin")}
    for name, chart in drawn.items():
        data = chart.path.read_bytes()
        width, height = struct.unpack(">II", png_chunks(data)[0][1][:8])
        assert (width, height) == (chart.width, chart.height), name
        assert (width, height, chart.platform) in allowed, name
        assert chart.path.name == f"{name}.png"


def test_same_results_give_the_same_bytes(
    results: dict, drawn: dict[str, charts.ChartFile], portrait: charts.ChartFile, tmp_path: Path
) -> None:
    for name, size in (
        ("scoreboard", None),
        ("scoreboard", "linkedin_portrait"),
        ("slot_timeline", None),
        ("kv_fit", None),
    ):
        # Both draws from scratch, not the second from the drawing cache: the first is the
        # module's own draw (drawn or portrait, made under drawcache.fresh too).
        a = (drawn[name] if size is None else portrait).path.read_bytes()
        with drawcache.fresh():
            b = charts.draw(name, results, tmp_path / "b", size=size).path.read_bytes()
        assert a == b, (name, size)


@pytest.fixture(scope="module")
def new_process(results: dict, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """One new process, with another hash seed, doing what a rebuild does and in its order:
    validate Day 37's spec (charts and carousel included), then draw. It writes what it found
    once the spec was checked (the spec's charts, the registry's names, any matplotlib module
    loaded) to checked.json, then draws the scoreboard from results.json into there/. One
    process start serves the two tests that need one, each with its own assertions."""
    import shutil
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("new-process")
    shutil.copytree(ROOT / "days", folder / "days", ignore=shutil.ignore_patterns("*.measured"))
    spec = folder / "days" / "day37.yaml"
    text = spec.read_text(encoding="utf-8")
    assert "scoreboard" not in STILL_EAGER  # a stubbed module's charts cannot be drawn there
    for module in STILL_EAGER:  # their charts cannot be listed without importing matplotlib
        for name in [n for n, c in charts.CHARTS.items() if c.draw.__module__.endswith(f".{module}")]:
            text = text.replace(f", {name}]", "]").replace(f"{name}, ", "")
    spec.write_text(text, encoding="utf-8")
    (folder / "results.json").write_text(json.dumps(results))
    code = (
        "import json, sys, types\n"
        "from pathlib import Path\n"
        f"for m in {sorted(STILL_EAGER)!r}: sys.modules['engine.charts.' + m] = types.ModuleType(m)\n"
        "from engine.spec import load_spec\n"
        "spec = load_spec(sys.argv[1])\n"
        "from engine.charts import registry\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib')\n"
        "checked = {'charts': bool(spec.charts and spec.carousel), 'names': registry.names(), 'matplotlib': loaded}\n"
        "Path(sys.argv[2]).write_text(json.dumps(checked))\n"
        "from engine import charts\n"
        "charts.draw('scoreboard', json.load(open(sys.argv[3])), Path(sys.argv[4]))\n"
    )
    args = [spec, folder / "checked.json", folder / "results.json", folder / "there"]
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    return folder, done


def test_another_process_draws_the_same_bytes(drawn: dict[str, charts.ChartFile], new_process) -> None:
    """A rebuild is a new process with a new hash seed: its PNG must still match byte for byte
    (here: this process's own draw from scratch, the module's)."""
    folder, done = new_process
    assert done.returncode == 0, done.stderr
    assert (folder / "there" / "scoreboard.png").read_bytes() == drawn["scoreboard"].path.read_bytes()


def test_pngs_carry_no_timestamp_or_software_tag(drawn: dict[str, charts.ChartFile]) -> None:
    for name, chart in drawn.items():
        kinds = {kind for kind, _ in png_chunks(chart.path.read_bytes())}
        assert b"tIME" not in kinds, name
        text = b"".join(
            body for kind, body in png_chunks(chart.path.read_bytes()) if kind in (b"tEXt", b"iTXt", b"zTXt")
        )
        assert b"Software" not in text and b"matplotlib" not in text.lower(), name


def test_every_chart_is_opaque_and_its_png_is_the_canvas(
    results: dict, drawn: dict[str, charts.ChartFile]
) -> None:
    """No pixel lets the page show through (the platforms show a transparent PNG on their own,
    sometimes dark, background; the carousel embeds a chart's pixels as drawn). The PNG is RGB:
    what it leaves out of the canvas it was drawn on is the alpha channel, 255 everywhere, and
    every other byte is the canvas's."""
    from PIL import Image

    for name, chart in drawn.items():
        canvas = np.asarray(_built(name, results).canvas.buffer_rgba())  # as the save drew it
        assert (canvas[..., 3] == 255).all(), name
        with Image.open(chart.path) as image:
            assert image.mode == "RGB", name
            assert np.array_equal(np.asarray(image), canvas[..., :3]), name


def test_alt_text_is_saved_beside_and_fits_both_platforms(drawn: dict[str, charts.ChartFile]) -> None:
    for name, chart in drawn.items():
        saved = chart.path.with_name(f"{name}.alt.txt").read_text(encoding="utf-8")
        assert saved.strip() == chart.alt_text
        assert 20 < len(chart.alt_text) <= 250, (name, len(chart.alt_text))


def test_alt_text_is_made_from_the_numbers(results: dict, drawn: dict[str, charts.ChartFile]) -> None:
    alt = {name: chart.alt_text for name, chart in drawn.items()}
    for needle in ("14.3%", "72.3%", "5.0x", "2,048 tokens: 64", "8,192 tokens: 16"):
        assert needle in alt["scoreboard"], needle
    assert "2,048-token context: 64 fit" in alt["kv_fit"] and "halves" in alt["kv_fit"]
    assert "5,797 steps" in alt["slot_timeline"] and "1,148 steps" in alt["slot_timeline"]
    assert "64 GiB KV cache" in alt["memory_breakdown"] and "14 GiB weights" in alt["memory_breakdown"]
    assert "98.1 ms" in alt["queue_hockey_stick"]
    assert "42.6 ms" in alt["shared_vs_separate"] and "2.1x longer" in alt["shared_vs_separate"]
    assert "8 simulated serving configurations" in alt["pareto"] and "6 meet the targets" in alt["pareto"]
    # at 5 req/s both A100 40GB rows cost $1.99 an hour; 256 seqs moves more tokens (1,046/s vs 1,044/s)
    assert "1× a100-40gb, seqs 256, batch 4,096, 5 req/s: $1.99 an hour" in alt["cheapest_table"]
    # a different number gives a different alt text: nothing is typed in
    changed = copy.deepcopy(results)
    changed["batching"]["policies"]["static"]["utilisation"] = 0.2
    fig, text = charts.CHARTS["scoreboard"](changed)
    assert "20.0%" in text and "14.3%" not in text


def test_without_the_data_a_chart_says_what_is_missing(results: dict, tmp_path: Path) -> None:
    no_paged = copy.deepcopy(results)
    del no_paged["batching"]["policies"]["paged"]
    with pytest.raises(ValueError, match="kv_blocks_used"):
        charts.draw("kv_blocks", no_paged, tmp_path)
    with pytest.raises(ValueError, match="'queueing'"):
        charts.draw("queue_hockey_stick", {"day": 37}, tmp_path)
    with pytest.raises(ValueError, match="unknown chart"):
        charts.draw("pie", results, tmp_path)
    assert not list(tmp_path.glob("*.png"))


def test_size_override_writes_a_second_file(portrait: charts.ChartFile) -> None:
    chart = portrait  # charts.draw("scoreboard", results, folder, size="linkedin_portrait")
    assert chart.path.name == "scoreboard-linkedin_portrait.png"
    assert (chart.width, chart.height, chart.platform) == (1080, 1350, "linkedin")


# ---- what is on the picture -------------------------------------------------------------------


def _texts(fig) -> list[str]:
    return [
        t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_fontsize"))
    ]


_FIGURES: dict[tuple[str, str, str | None], object] = {}


def _figure_key(name: str, results: dict, size: str | None) -> tuple[str, str, str | None]:
    return (name, json.dumps(results, sort_keys=True, default=str), size)


def _built(name: str, results: dict, size: str | None = None):
    """The chart drawn from ``results`` at ``size`` (its registered size when None, as a build
    draws it); the same results and size are drawn once per session (the tests only read a
    figure), keyed by the results' content, not their identity. The module's own results at the
    registered size are the figures the ``drawn`` fixture saved, once it has run."""
    sample = _sample(name, results)  # what _draw_from_scratch drew it from, and keyed it by
    key = _figure_key(name, sample, size)
    if key not in _FIGURES:
        with style.theme():
            fig, _ = charts.CHARTS[name](sample, size=style.SIZES[size or charts.CHARTS[name].size])
            # Lays the figure out as a draw does (tick labels created, so they are checked too;
            # text extents measured by the same renderer) without rasterising: the pixels are
            # the PNG tests' business (test_every_chart_is_at_its_platform_size and after).
            fig.draw_without_rendering()
        _FIGURES[key] = fig
    return _FIGURES[key]


def test_each_chart_names_where_its_numbers_came_from(results: dict) -> None:
    expected = {
        "scoreboard": ["simulated, 200 requests, 16 slots", "calculated"],
        "kv_fit": ["calculated"],
        "memory_breakdown": ["calculated"],
        "slot_timeline": ["simulated, 200 requests, 16 slots"],
        "utilisation": ["simulated"],
        "latency_cdf": ["simulated"],
        "kv_blocks": ["simulated"],
        "queue_hockey_stick": ["simulated, M/M/1"],
        "shared_vs_separate": ["simulated, 2 servers at 90% load"],
        "terminal": ["measured on Test CPU, 2 cores"],
        "figures_table": ["Measured on Test CPU, 2 cores"],
        "pareto": ["Simulated: 8 configurations", "list prices"],
        "cheapest_table": ["Simulated: 8 configurations", "list prices"],
        "step_time": ["measured on NVIDIA H200: 7b-class shape, bfloat16, random weights"],
    }
    assert set(expected) <= set(_still())  # a chart listed here and no longer registered
    for name in _still():
        text = " | ".join(_texts(_built(name, results)))
        sample = _sample(name, results)
        # Any chart: the source of each section it draws is on it (simulated, measured on …).
        for need in charts.CHARTS[name].needs:
            source = sample[need].get("source") if isinstance(sample[need], dict) else None
            if isinstance(source, str):
                assert source.split(",")[0].lower() in text.lower(), (name, need, source)
        for needle in expected.get(name, []):  # the built-in charts, worked out here
            assert needle in text, (name, needle)
    measured = copy.deepcopy(results)
    measured["batching"]["source"] = "measured on NVIDIA H100 80GB HBM3"
    assert any("measured on NVIDIA H100 80GB HBM3" in t for t in _texts(_built("utilisation", measured)))


def test_text_is_big_enough_for_a_phone_and_has_no_emoji(results: dict) -> None:
    for name in _still():
        fig = _built(name, results)
        for artist in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_fontsize")):
            text = artist.get_text()
            if not text.strip() or not artist.get_visible():
                continue
            assert artist.get_fontsize() >= style.MIN_FONT_PT, (name, text, artist.get_fontsize())
            assert all(ord(ch) < 0x2190 or 0x2190 <= ord(ch) <= 0x22FF for ch in text), (name, text)


def test_colours_are_okabe_ito_or_grey(results: dict) -> None:
    from matplotlib.colors import to_hex

    allowed = {c.lower() for c in style.OKABE_ITO.values()}
    for name in _still():
        fig = _built(name, results)
        colours: set[str] = set()
        for ax in fig.axes:
            colours |= {to_hex(p.get_facecolor()) for p in ax.patches if p.get_visible()}
            colours |= {to_hex(c) for coll in ax.collections for c in coll.get_facecolors()}
            colours |= {to_hex(line.get_color()) for line in ax.lines}
        for colour in colours:
            r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
            assert colour in allowed or r == g == b or colour == "#ffffff", (name, colour)


def test_slot_timeline_shows_every_request_and_every_idle_slot_step(results: dict) -> None:
    """The coloured bars add up to the tokens; the rest of each panel is idle, in grey; and the
    bars are a few collections, not one patch per token."""
    fig = _built("slot_timeline", results)
    tokens = results["batching"]["workload"]["total_output_tokens"]
    grey = style.LIGHT_GREY.lower()
    from matplotlib.colors import to_hex

    panels = [ax for ax in fig.axes if ax.collections]
    assert len(panels) == 2
    for ax, name in zip(panels, ("static", "continuous")):
        busy = idle_area = 0.0
        for coll in _bar_collections(ax):  # each path is one bar; its width in steps from its vertices
            spans = sum(path.vertices[:, 0].max() - path.vertices[:, 0].min() for path in coll.get_paths())
            if to_hex(coll.get_facecolors()[0]) == grey:
                idle_area += spans
            else:
                busy += spans
        steps = results["batching"]["policies"][name]["steps"]
        assert busy == pytest.approx(tokens)
        assert idle_area == pytest.approx(steps * SLOTS)  # the grey track under every slot
        assert len(ax.collections) <= 3 * SLOTS + 1  # + the hand-over hairlines
    assert len(fig.findobj(lambda a: a.__class__.__name__ == "Rectangle")) < 100


def _bar_collections(ax) -> list:
    from matplotlib.collections import LineCollection

    return [c for c in ax.collections if not isinstance(c, LineCollection)]


def _joins(timeline: dict) -> set[tuple[int, int]]:
    """(slot, step) where a request starts in a slot the step the one before it there ended."""
    by_slot: dict[int, list[tuple[int, int]]] = {}
    for slot, start, end in zip(timeline["slot"], timeline["start_step"], timeline["end_step"]):
        by_slot.setdefault(slot, []).append((start, end))
    found = set()
    for slot, spans in by_slot.items():
        spans.sort()
        found |= {(slot, b[0]) for a, b in zip(spans, spans[1:]) if a[1] == b[0]}
    return found


def test_back_to_back_requests_are_drawn_apart(results: dict) -> None:
    """A request that takes over a slot the step the last one left it gets a white hairline at
    the hand-over, so no two requests merge into one bar longer than any request: one line
    collection per panel, not one patch per token."""
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_hex

    fig = _built("slot_timeline", results)
    panels = [ax for ax in fig.axes if ax.collections]
    longest = results["batching"]["workload"]["longest"]
    for ax, name in zip(panels, ("static", "continuous")):
        timeline = results["batching"]["policies"][name]["timeline"]
        expected = _joins(timeline)
        assert expected, name  # the lab's run has hand-overs in both panels
        lines = [c for c in ax.collections if isinstance(c, LineCollection)]
        assert len(lines) == 1, name
        assert {to_hex(c) for c in lines[0].get_colors()} == {"#ffffff"}
        drawn = set()
        for seg in lines[0].get_segments():
            (x0, y0), (x1, y1) = seg
            assert x0 == x1 and int(y0) == int(y1) and y1 - y0 > 0.5, seg  # inside one slot's band
            drawn.add((int(y0), int(x0)))
        assert drawn == expected, name
        # what a reader sees: bars touching with no hairline between them read as one bar
        spans: dict[int, list[tuple[float, float]]] = {}
        for coll in _bar_collections(ax):
            if to_hex(coll.get_facecolors()[0]) == style.LIGHT_GREY.lower():
                continue
            for path in coll.get_paths():
                xs, ys = path.vertices[:, 0], path.vertices[:, 1]
                spans.setdefault(int(ys.min()), []).append((xs.min(), xs.max()))
        for slot, row in spans.items():
            row.sort()
            run_start, run_end = row[0]
            for a, b in row[1:]:
                if a == run_end and (slot, int(a)) not in drawn:
                    run_end = b
                else:
                    assert run_end - run_start <= longest, (name, slot, run_start, run_end)
                    run_start, run_end = a, b
            assert run_end - run_start <= longest, (name, slot, run_start, run_end)


def test_kv_fit_is_log_log_with_one_line_per_view(results: dict) -> None:
    fig = _built("kv_fit", results)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    views = 1 + len(results["kv_cache"]["compare"])
    lines = [line for line in ax.lines if len(line.get_xdata()) == len(CONTEXTS)]
    assert len(lines) == views
    ys = list(lines[0].get_ydata())
    assert ys == [256, 128, 64, 32, 16, 8, 4]


def _two_compare_views(results: dict) -> dict:
    """The Day 37 spec's shape: the main view, plus two models under vLLM's own accounting."""
    out = copy.deepcopy(results)
    near = _view("Llama-2-7B, vLLM accounting on an H100 80GB", 80, 58, 12.55, 1.45)
    far = _view("Llama-3-8B (8 KV heads), vLLM accounting on an H100 80GB", 80, 55, 15, 1.2)
    for view, model in ((near, "llama-2-7b"), (far, "llama-3-8b")):
        view["model"]["name"] = model
        view["budget"] = {"kind": "vllm", "gpu_memory_utilization": 0.9}
    for row in far["plan"]["contexts"]:  # 8 KV heads instead of 32: four times as many fit
        row["max_requests"] *= 4
    out["kv_cache"]["compare"] = [near, far]
    return out


def _label_boxes(fig, values: list[int]) -> dict[int, object]:
    """The biggest text showing each value (the callouts), by value."""
    found: dict[int, tuple[float, object]] = {}
    for t in fig.axes[0].texts:
        for v in values:
            if t.get_text() == f"{v:,}" and t.get_fontsize() > found.get(v, (0, None))[0]:
                found[v] = (t.get_fontsize(), t)
    return {v: t for v, (_, t) in found.items()}


def test_kv_fit_callouts_sit_on_the_main_line_and_the_lines_stay_apart(results: dict) -> None:
    """The highlighted numbers point at the main view's own ringed points, hang below the lines
    (a compare view above, e.g. a GQA model, cannot claim them), and no line runs through them;
    a compare view drawn almost on top of the main one still reads as another line."""
    data = _two_compare_views(results)
    fig = _built("kv_fit", data)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    views = [data["kv_cache"]["main"], *data["kv_cache"]["compare"]]
    lines = [line for line in ax.lines if len(line.get_xdata()) == len(CONTEXTS)]
    main_fit = {r["context"]: r["max_requests"] for r in views[0]["plan"]["contexts"]}
    highlight = data["kv_cache"]["highlight"]
    callouts = _label_boxes(fig, [main_fit[c] for c in highlight])
    assert set(callouts) == {main_fit[c] for c in highlight}
    others = [t for t in ax.texts if t not in callouts.values() and t.get_text().strip()]
    for c in highlight:
        text = callouts[main_fit[c]]
        assert tuple(text.xy) == (c, main_fit[c])  # anchored on the main view's point
        box = text.get_bbox_patch().get_window_extent(renderer)
        px, py = ax.transData.transform((c, main_fit[c]))
        assert box.y1 < py  # below its point: away from views that run above the main one
        for line in lines:  # no line crosses the label (sampled densely in display space)
            xy = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
            for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
                for f in np.linspace(0, 1, 200):
                    assert not box.contains(x0 + f * (x1 - x0), y0 + f * (y1 - y0)), (c, line.get_label())
        for other in others:
            assert not box.overlaps(other.get_window_extent(renderer)), (c, other.get_text())
    main, *compare = lines
    assert main.get_linestyle() == "-" and all(line.get_linestyle() != "-" for line in compare)
    assert len({line.get_marker() for line in lines}) == len(lines)  # every view its own marker
    assert all(line.get_markerfacecolor() != main.get_markerfacecolor() for line in compare)  # hollow


def test_kv_charts_name_the_source_of_every_view(results: dict) -> None:
    data = _two_compare_views(results)
    for name in ("kv_fit", "memory_breakdown"):
        fig = _built(name, data)
        notes = [t.get_text() for t in fig.texts if t.get_color() == style.MUTED]
        joined = " | ".join(notes)
        assert "calculated: 7B-class on an 80 GiB GPU, 16 GiB reserved" in joined, (name, notes)
        assert "compare views: llama-2-7b and llama-3-8b, vLLM accounting at 90% of GPU memory" in joined
        assert not any(n.endswith("…") for n in notes), notes  # nothing cut off to fit


def test_hockey_stick_curve_is_the_closed_form(results: dict) -> None:
    fig = _built("queue_hockey_stick", results)
    curve = max(fig.axes[0].lines, key=lambda line: len(line.get_xdata()))
    for x, y in zip(curve.get_xdata()[::50], curve.get_ydata()[::50]):
        assert y == pytest.approx(10 / (1 - x))


def test_portrait_scoreboard_stacks_the_halves(results: dict) -> None:
    with style.theme():
        fig, _ = charts.CHARTS["scoreboard"](results, size=style.SIZES["linkedin_portrait"])
    bars, table = fig.axes[:2]
    assert bars.get_position().y0 > table.get_position().y1


def test_latency_cdf_draws_the_full_curve_when_the_results_have_one(results: dict) -> None:
    with_curve = copy.deepcopy(results)
    pol = with_curve["batching"]["policies"]["continuous"]
    ends = sorted(pol["timeline"]["end_step"])
    pol["latency_cdf"] = {
        "quantiles": [0.0, 0.5, 1.0],
        "e2e_steps": [ends[0], ends[len(ends) // 2], ends[-1]],
    }
    fig = _built("latency_cdf", with_curve)
    xs = [list(line.get_xdata()) for line in fig.axes[0].lines]
    assert [ends[0], ends[len(ends) // 2], ends[-1]] in xs
    text = " | ".join(_texts(fig))
    assert "curve through p50, p90, p99" in text  # static still has percentiles only: said so
    del with_curve["batching"]["policies"]["static"], with_curve["batching"]["policies"]["paged"]
    assert "curve through" not in " | ".join(_texts(_built("latency_cdf", with_curve)))


def test_kv_blocks_reads_the_simulators_binned_series(results: dict) -> None:
    binned = copy.deepcopy(results)
    paged = binned["batching"]["policies"]["paged"]
    used = paged.pop("kv_blocks_used")
    paged["series"] = {"step": used["step"][::10], "kv_blocks_used": used["blocks"][::10]}
    paged["kv_blocks"] = {"num_blocks": 2048, "block_size": 16}
    fig, alt = charts.CHARTS["kv_blocks"](binned)
    assert f"Peak {max(used['blocks'][::10]):,} of 2,048 blocks" in alt


def test_no_text_spills_off_the_image_or_onto_the_title(results: dict) -> None:
    """Titles and sources come from results and can be long: they are fitted, never cut off,
    and no plot runs into the title, the section headings or the source lines. The module's
    results carry the long title, so these are the figures the other tests read too."""
    long_title = results
    assert long_title["title"] == LONG_TITLE
    cases = [(name, long_title, None) for name in _still()]
    cases += [("scoreboard", long_title, "linkedin_portrait"), ("scoreboard", long_title, "linkedin")]
    cases += [(name, _two_compare_views(long_title), None) for name in ("kv_fit", "memory_breakdown")]
    for name, data, size in cases:
        fig = _built(name, data, size)
        renderer = fig.canvas.get_renderer()
        drawn = fig.get_tightbbox(renderer)  # inches, only what is actually drawn
        width, height = fig.get_size_inches()
        assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01, (name, drawn)
        assert drawn.x1 <= width + 0.01 and drawn.y1 <= height + 0.01, (name, drawn)
        frames = [t for t in fig.texts if t.get_text().strip()]  # heading, section titles, sources
        boxes = [frame.get_window_extent(renderer) for frame in frames]
        plots = [ax.get_tightbbox(renderer) for ax in fig.axes]  # each measured once, not per text
        for i, (frame, box) in enumerate(zip(frames, boxes)):
            for plot in plots:
                assert not box.overlaps(plot), (name, frame.get_text())
            for other, other_box in zip(frames[i + 1 :], boxes[i + 1 :]):
                assert not box.overlaps(other_box), (
                    name,
                    frame.get_text(),
                    other.get_text(),
                )


def _toy_figure(shown: str, size):
    fig = style.new_figure(size or "linkedin")
    fig.text(0.1, 0.5, shown)
    return fig, f"A toy chart showing {shown}, for the memory of drawings."


def _toy_reads(results, size=None):
    """Reads 'a', and 'b' only where 'a' is 1: what it reads depends on what it read."""
    return _toy_figure(
        f"a={results.get('a')}" + (f", b={results['b']}" if results.get("a") == 1 else ""), size
    )


def _toy_everything(results, size=None):
    """Looks at the whole mapping (as json.dumps of a dict would)."""
    return _toy_figure(", ".join(f"{k}={v}" for k, v in sorted(dict(results).items())), size)


def test_a_chart_is_drawn_again_exactly_when_what_it_read_changed(tmp_path: Path) -> None:
    """The drawing cache keys a chart on the results it read last time: a change elsewhere
    gives the kept bytes, a change to anything it read (or whether a key it looked for is
    there) draws again, and every answer, remembered or drawn, shows the numbers asked for."""
    from engine.charts import registry

    real: list[str] = []
    png_bytes = style.png_bytes

    def counted(fig) -> bytes:
        real.append(style.size_of(fig).key)
        return png_bytes(fig)

    registry.register_chart("toy_reads", needs=(), size="linkedin")(_toy_reads)
    registry.register_chart("toy_everything", needs=(), size="linkedin")(_toy_everything)
    try:
        # The cache keys only functions of engine/charts/ (their code is in every key); these
        # toys stand in for one, as a declared chart's function does.
        patch_module = pytest.MonkeyPatch()
        patch_module.setattr(_toy_reads, "__module__", "engine.charts.toy")
        patch_module.setattr(_toy_everything, "__module__", "engine.charts.toy")
        with drawcache.fresh(), pytest.MonkeyPatch.context() as patch:
            patch.setattr(style, "png_bytes", counted)

            def alt(name: str, results: dict, drawn: bool) -> str:
                before = len(real)
                chart = charts.draw(name, results, tmp_path / str(len(real)))
                assert len(real) == before + drawn, (name, results)
                assert (
                    chart.path.exists()
                    and chart.alt_text == chart.path.with_suffix(".alt.txt").read_text().strip()
                )
                return chart.alt_text.removeprefix("A toy chart showing ").removesuffix(
                    ", for the memory of drawings."
                )

            assert "a=1, b=2" == alt("toy_reads", {"a": 1, "b": 2, "c": 3}, drawn=True)
            assert "a=1, b=2" == alt("toy_reads", {"a": 1, "b": 2, "c": 4}, drawn=False)  # c: not read
            assert "a=1, b=2" == alt("toy_reads", {"a": 1, "b": 2}, drawn=False)
            assert "a=1, b=5" == alt("toy_reads", {"a": 1, "b": 5, "c": 3}, drawn=True)
            assert "a=2" == alt("toy_reads", {"a": 2, "b": 5}, drawn=True)  # now reads a only
            assert "a=2" == alt("toy_reads", {"a": 2, "b": 9}, drawn=False)
            assert "a=None" == alt("toy_reads", {"b": 9}, drawn=True)  # a looked for, absent
            assert "a=1, b=2" == alt("toy_reads", {"a": 1, "b": 2, "c": 3}, drawn=True)
            assert "a=1, b=2, c=3" == alt("toy_everything", {"a": 1, "b": 2, "c": 3}, drawn=True)
            assert "a=1, b=2, c=4" == alt("toy_everything", {"a": 1, "b": 2, "c": 4}, drawn=True)
            assert "a=1, b=2, c=4" == alt("toy_everything", {"a": 1, "b": 2, "c": 4}, drawn=False)
    finally:
        patch_module.undo()
        registry.unregister_chart("toy_reads")
        registry.unregister_chart("toy_everything")


def test_a_slide_shows_its_posts_image_and_the_chart_is_drawn_once(results: dict, tmp_path: Path) -> None:
    """A chart drawn for its post is not drawn again for a carousel slide: the slide's pixels
    are the PNG charts.draw wrote (decoded by Pillow here), and no figure is built for it."""
    from PIL import Image

    from engine.charts import carousel

    built: list[str] = []
    figure = charts.figure
    with drawcache.fresh(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(charts, "figure", lambda name, *a: built.append(name) or figure(name, *a))
        posted = charts.draw("kv_fit", results, tmp_path)
        on_slide = carousel.chart_pixels("kv_fit", results)
    assert built == ["kv_fit"]
    with Image.open(posted.path) as image:
        assert np.array_equal(on_slide, np.asarray(image.convert("RGB")))


def test_a_carousel_is_drawn_again_when_a_figure_its_slides_show_changed(results: dict) -> None:
    """The carousel is remembered by what its slides' charts read: the step-time chart reads the
    measurement, which no section names, so another machine's file draws its slide again, and
    a change no slide shows does not. (Before a slide's chart has drawn, all of results counts.)"""
    from engine.charts import carousel
    from engine.render.slides import CarouselSpec

    deck = CarouselSpec(slides=["cover", {"chart": "step_time"}, "closing"])
    other_machine = copy.deepcopy(results)
    other_machine["measured"]["source"] = "measured on NVIDIA H100 80GB HBM3"
    elsewhere = copy.deepcopy(results)
    elsewhere["queueing"]["lines"]["wait_ratio"] = 3.0
    with drawcache.fresh():
        assert carousel.drawn_from(deck, elsewhere) != carousel.drawn_from(deck, results)
        carousel.chart_pixels("step_time", results)
        key = carousel.drawn_from(deck, results)
        assert carousel.drawn_from(deck, elsewhere) == key
        assert carousel.drawn_from(deck, other_machine) != key
        assert carousel.drawn_from(deck, {**results, "title": "Another title"}) != key  # the frame


def test_the_carousels_key_holds_the_covers_policy_colours(results: dict, monkeypatch) -> None:
    """The cover signs with every registered policy's colour, which results do not hold: a policy
    registered, or the order changed, later in the process must not bring back the old cover."""
    from engine.charts import carousel
    from engine.render.slides import CarouselSpec, SlideText

    deck = CarouselSpec(slides=["cover", "closing"])
    texts = [SlideText("Cover", ""), SlideText("Closing", "")]
    key = carousel.deck_key(deck, texts, results)
    cover = carousel.page_key(deck.slides[0], texts[0], results, 1, 2)
    order = style.policy_order()
    monkeypatch.setattr(style, "policy_order", lambda: tuple(reversed(order)))
    assert carousel.signature() == [style.policy_colour(name) for name in reversed(order)]
    assert carousel.deck_key(deck, texts, results) != key
    assert carousel.page_key(deck.slides[0], texts[0], results, 1, 2) != cover


# Chart modules that still import matplotlib when imported (not yet drawn from): checking a
# spec's chart names loads every chart module, so each one here costs every build ~1 s of CPU.
# Empty it as they become lazy: both tests below fail while this set is wrong either way.
STILL_EAGER: set[str] = set()


def _imports_matplotlib_at_module_level(path: Path) -> bool:
    """An import of matplotlib that runs when the module is imported: at module level, not in a
    function body nor under ``if TYPE_CHECKING:``."""
    import ast

    def named(node: ast.stmt) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if isinstance(node, ast.ImportFrom):
            return [node.module or ""]
        return []

    def walk(body: list[ast.stmt]) -> bool:
        for node in body:
            if any(n == "matplotlib" or n.startswith("matplotlib.") for n in named(node)):
                return True
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try, ast.With)) and walk(
                node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
            ):
                return True
        return False

    return walk(syntax_tree(path).body)


def test_chart_modules_import_matplotlib_only_where_they_draw() -> None:
    folder = ROOT / "engine" / "charts"
    eager = {p.stem for p in folder.glob("*.py") if _imports_matplotlib_at_module_level(p)}
    assert eager == STILL_EAGER
    # the check itself sees an eager import, and looks past TYPE_CHECKING and function bodies
    probe = folder / "animation.py"
    assert _imports_matplotlib_at_module_level(probe) == ("animation" in STILL_EAGER)


def test_checking_a_specs_chart_names_does_not_import_matplotlib(new_process) -> None:
    """A real process (this one has matplotlib loaded) validates Day 37's spec, charts and
    carousel included, and never imports matplotlib: a build that draws nothing pays nothing.
    (The process then draws, as a rebuild would: test_another_process_draws_the_same_bytes.)"""
    folder, done = new_process
    assert (folder / "checked.json").exists(), done.stderr
    checked = json.loads((folder / "checked.json").read_text())
    assert checked["charts"], "the spec lists no charts"
    assert len(checked["names"]) > 5, checked["names"]
    assert not checked["matplotlib"], checked["matplotlib"][:5]


def test_the_png_writer_is_read_back_by_pillow_pixel_for_pixel() -> None:
    """engine.charts.png against Pillow's decoder: random pixels (the worst case for filter 0),
    odd sizes, and the dpi as Pillow reads it from pHYs."""
    import io

    from PIL import Image

    from engine.charts import png

    rng = np.random.default_rng(7)
    for height, width, dpi in ((1, 1, 72), (3, 5, 200), (627, 1200, 100), (17, 1080, 400)):
        rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        data = png.encode(rgb, dpi)
        with Image.open(io.BytesIO(data)) as image:
            assert image.mode == "RGB" and image.size == (width, height)
            assert np.array_equal(np.asarray(image), rgb)
            assert image.info["dpi"] == pytest.approx((dpi, dpi), abs=0.01)
        assert [kind for kind, _ in png_chunks(data)] == [b"IHDR", b"pHYs", b"IDAT", b"IEND"]
    with pytest.raises(ValueError, match="height × width × 3"):
        png.encode(np.zeros((2, 2, 4), np.uint8), 100)


def test_the_png_reader_reads_what_the_writer_and_pillow_wrote_and_refuses_the_rest() -> None:
    """png.decode reads the writer's files (random pixels, odd sizes), and the same form written
    by Pillow (a flat picture, whose rows it leaves unfiltered) and by hand with the IDAT split
    in pieces. Refused, each with a ValueError that says why: filtered rows, another colour
    type, a damaged or cut-short chunk, a side past its bound, chunks out of order or after the
    end, a damaged, unended or overlong zlib stream; and any byte changed (the CRCs put right)
    gives a picture or a ValueError, never another exception."""
    import io

    from PIL import Image

    from engine.charts import png

    rng = np.random.default_rng(11)
    for height, width in ((1, 1), (3, 5), (627, 1200)):
        rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        assert np.array_equal(png.decode(png.encode(rgb, 100)), rgb)
        split = io.BytesIO()
        Image.fromarray(rgb).save(split, format="png", compress_level=1)  # Pillow filters its rows
        if height > 1:
            with pytest.raises(ValueError, match="filtered"):
                png.decode(split.getvalue())
    flat = np.zeros((40, 30, 3), np.uint8)  # every row of zeros: Pillow's adaptive choice is filter 0
    written = io.BytesIO()
    Image.fromarray(flat).save(written, format="png")
    assert np.array_equal(png.decode(written.getvalue()), flat)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    def made(width: int, height: int, rows: bytes, colour: int = 2) -> bytes:
        header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
        data = zlib.compress(rows)
        pieces = [chunk(b"IDAT", data[k : k + 7]) for k in range(0, len(data), 7)]  # split IDAT
        return png.SIGNATURE + chunk(b"IHDR", header) + b"".join(pieces) + chunk(b"IEND", b"")

    row = b"\0" + bytes(range(6))
    assert png.decode(made(2, 3, row * 3)).tolist() == [[[0, 1, 2], [3, 4, 5]]] * 3
    good = png.encode(np.full((4, 4, 3), 9, np.uint8), 72)
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 3, 8, 2, 0, 0, 0))
    end = chunk(b"IEND", b"")

    def with_data(stream: bytes) -> bytes:
        return png.SIGNATURE + header + chunk(b"IDAT", stream) + end

    whole = zlib.compress(row * 3)
    refused = [
        ("not a PNG", b"GIF89a" + good[6:]),
        ("cut short", good[:-3]),
        ("damaged", good[:40] + bytes([good[40] ^ 1]) + good[41:]),
        ("8-bit RGB", made(2, 3, (b"\0" + bytes(8)) * 3, colour=6)),  # RGBA
        ("this module wrote", made(9000, 1, b"\0" * 27001)),  # a side past MAX_SIDE
        ("wrong size", made(2, 3, row * 4)),  # more rows than the header says
        ("header first", png.SIGNATURE + end),
        ("header first", png.SIGNATURE + chunk(b"IDAT", whole) + header + end),  # data first
        ("its header", png.SIGNATURE + chunk(b"IHDR", bytes(12)) + chunk(b"IDAT", whole) + end),
        ("empty end", png.SIGNATURE + header + chunk(b"IDAT", whole) + chunk(b"IEND", b"x")),
        ("end last", with_data(whole) + chunk(b"tEXt", b"after the end")),
        ("image data damaged", with_data(whole[:2] + bytes([whole[2] ^ 0xFF]) + whole[3:])),
        ("wrong size", with_data(whole[:-4])),  # the stream never ends
        ("wrong size", with_data(whole + b"junk")),  # bytes after the stream
    ]
    for reason, data in refused:
        with pytest.raises(ValueError, match=reason):
            png.decode(data)
    # Any byte changed, the CRCs put right again: a picture or a ValueError, nothing else.
    for _ in range(300):
        damaged = bytearray(good)
        damaged[rng.integers(8, len(good))] = rng.integers(0, 256)
        at, fixed = len(png.SIGNATURE), bytearray(damaged[: len(png.SIGNATURE)])
        while at + 12 <= len(damaged):
            (length,) = struct.unpack(">I", damaged[at : at + 4])
            length = min(length, len(damaged) - at - 12)
            kind, body = bytes(damaged[at + 4 : at + 8]), bytes(damaged[at + 8 : at + 8 + length])
            fixed += chunk(kind, body)
            at += 12 + length
        with contextlib.suppress(ValueError):
            png.decode(bytes(fixed))


def test_a_slide_preview_shrinks_the_chart_keeping_its_colours_and_areas() -> None:
    """carousel.shrunk: a flat colour stays that colour exactly; 2 × 2 blocks halved become
    their colours; a stripe one old pixel wide keeps its share of the area (a third of the
    grey, not dropped or doubled as sampling would); the size is the one asked for."""
    from engine.charts import carousel

    flat = np.full((900, 1600, 3), (0, 114, 178), np.uint8)
    assert (carousel.shrunk(flat, 513, 912) == (0, 114, 178)).all()
    blocks = np.kron(
        np.array([[[10, 20, 30], [200, 100, 0]], [[0, 0, 0], [255, 255, 255]]]), np.ones((2, 2, 1))
    )
    halved = carousel.shrunk(blocks.repeat(8, axis=0).repeat(8, axis=1).astype(np.uint8), 16, 16)
    assert halved[4, 4].tolist() == [10, 20, 30] and halved[12, 12].tolist() == [255, 255, 255]
    stripes = np.full((30, 30, 3), 255, np.uint8)
    stripes[:, ::3] = 0  # every third column black
    thirds = carousel.shrunk(stripes, 10, 10).astype(float)
    assert thirds.shape == (10, 10, 3)
    assert abs(thirds[2:-2, 2:-2].mean() - 255 * 2 / 3) < 2


def test_an_alt_text_that_lists_rows_says_how_many_it_left_out() -> None:
    """Worked by hand: 'T: a 1; b 2; c 3;' is 17 characters, so at 40 every row fits. Four
    rows of ' row k is long;' (15 each) after 'Intro text:' (11): at 70, two fit beside ' and 2
    more in the image.' (11 + 2 × 15 + 25 = 66; three would be 81); at 40 not even one does
    (11 + 15 + 25 = 51), and the count is said alone."""
    from engine.charts.style import fit_alt_list

    assert fit_alt_list("T:", ["a 1;", "b 2;", "c 3;"], limit=40) == "T: a 1; b 2; c 3;"
    rows = [f"row {k} is long;" for k in range(4)]
    assert fit_alt_list("Intro text:", rows, limit=70) == (
        "Intro text: row 0 is long; row 1 is long; and 2 more in the image."
    )
    assert fit_alt_list("Intro text:", rows, limit=40) == "Intro text: 4 rows in the image."
    assert (
        fit_alt_list("Intro text:", ["row zero is a long one;"], limit=31)
        == "Intro text: 1 row in the image."
    )
    assert len(fit_alt_list("Intro text:", rows * 50)) <= 250
