"""A new kind of day from outside engine/: a toy section, chart, platform and batching policy,
registered from the tests alone.

The registries are the only way in: this file registers a coin-flip experiment, a chart of it and
a third platform with a 500-character limit, and the tests' toy batching policy (helpers.toy_policy:
one request at a time); it writes a spec and templates for them and builds the day with the
ordinary pipeline. No file under engine/ knows any of these names.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from engine import pipeline, sections
from engine.errors import UserError
from engine.platforms import Count, Violation
from engine.platforms import registry as platform_registry
from engine.platforms.day_dir import check_day_dir
from engine.platforms.linkedin import utf16_length
from engine.spec import load_spec

from helpers import assert_section_runs_its_example, toy_policy

REPO = Path(__file__).resolve().parent.parent
TOOT_LIMIT = 500


class CoinFlips(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    flips: int = Field(ge=1, le=100_000)
    seed: int = 0


def run_flips(section: CoinFlips, location: sections.SpecLocation, inputs: sections.Inputs) -> dict[str, Any]:
    heads = int(np.random.default_rng(section.seed).integers(0, 2, section.flips).sum())
    return {"source": "simulated", "flips": section.flips, "heads": heads, "share": heads / section.flips}


def flips_table(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "title": "Coin flips",
            "source": result["source"],
            "kind": "simulated",
            "rows": [("flips", str(result["flips"])), ("heads", str(result["heads"]))],
            "table": None,
        }
    ]


def draw_flips(results: dict[str, Any], size: Any = None) -> tuple[Any, str]:
    from engine.charts import style

    flips = results["coin_flips"]
    fig = style.new_figure(size or "x")
    style.heading(fig, f"{flips['heads']:,} heads in {flips['flips']:,} flips")
    ax = fig.add_axes((0.1, 0.18, 0.8, 0.62))
    ax.bar([0, 1], [flips["heads"], flips["flips"] - flips["heads"]], color=style.OKABE_ITO["blue"])
    ax.set_xticks([0, 1], ["heads", "tails"], fontsize=style.FONT["base"])
    ax.tick_params(axis="y", labelsize=style.FONT["base"])
    style.source_note(fig, f"Source: {flips['source']}, {flips['flips']:,} flips")
    return fig, f"Bar chart: {flips['heads']} heads in {flips['flips']} flips, simulated."


def flips_sample() -> dict[str, Any]:
    """The toy chart's sample: what the toy section computes for 100 flips."""
    return {
        "coin_flips": run_flips(CoinFlips(flips=100, seed=3), sections.SpecLocation(REPO / "x.yaml"), None)
    }  # type: ignore[arg-type]


def check_toot(text: str, draft: str) -> tuple[list[Count], list[Violation]]:
    length = utf16_length(text)
    ok = 0 < length <= TOOT_LIMIT
    found = [] if ok else [Violation(draft, None, "length", f"{length}/{TOOT_LIMIT}")]
    return [Count("length", length, TOOT_LIMIT, ok)], found


@pytest.fixture
def toy_kinds() -> Iterator[None]:
    from engine.charts import registry as chart_registry

    sections.register_section(
        "coin_flips",
        model=CoinFlips,
        run=run_flips,
        title="Coin flips",
        headline=lambda r: f"coin flips ({r['source']}): {r['heads']} heads",
        review_tables=flips_table,
        link_figure=lambda section, location: {"source": "simulated", "flips": section.flips},
        example=sections.SectionExample({"flips": 100, "seed": 3}),
    )
    chart_registry.register_chart("flips_bar", needs=("coin_flips",), size="x", example=flips_sample)(
        draw_flips
    )
    platform_registry.register_platform(
        platform_registry.Platform(
            name="toot",
            title="Mastodon",
            draft="toot.md",
            thread=False,
            check=check_toot,
            alt_limit=1500,
            image_size="x",
            alt_tags=("toot",),
            # "Heads: " 7, then "52 of 100 flips came up": 2 + 1 + 2 + 1 + 3 + 1 + 5 + 1 + 4 + 1 + 2
            example=platform_registry.Example("Heads: 52 of 100 flips came up", (30,)),
            order=30,
        )
    )
    try:
        with toy_policy():
            yield
    finally:
        sections.unregister_section("coin_flips")
        chart_registry.unregister_chart("flips_bar")
        platform_registry.unregister_platform("toot")


COINS = """\
day: 9
series: {name: 60 days of system design, length: 60}
title: Coins
repository: github.com/you/coins
hashtags: [SystemDesign, Probability, LearningInPublic]
coin_flips: {flips: 1000, seed: 3}
"""
BATCHING = """\
batching:
  slots: 4
  workload: {trace: day09.workload.csv}
  policies: [continuous, one_at_a_time]
"""
# The day built: the coin flips, the toy policy beside a built-in one, their charts, and a link
# back to an earlier day that has the coin flips and their chart alone.
SPEC = (
    COINS
    + BATCHING
    + """\
charts: [flips_bar, utilisation]
links_back: [{day: 8, claim: an earlier coin, spec: day08.yaml}]
"""
)
EARLIER = COINS.replace("day: 9", "day: 8").replace("flips: 1000", "flips: 10") + "charts: [flips_bar]\n"
# Five requests at once on 4 slots, worked by hand, steps counted from 0. Continuous: 3, 1, 4
# and 1 start at step 0; the two 1s are done after it, and the 5 runs steps 1 to 5, so the last
# step is 5 and there are 6. One at a time: back to back, 3 + 1 + 4 + 1 + 5 = 14 steps.
TRACE = "output_tokens\n3\n1\n4\n1\n5\n"

POST = """{% import "_macros.j2" as m %}
{{ m.day_line(day, series) }}: {{ coin_flips.heads | thousands }} heads in {{ coin_flips.flips | thousands }} flips ({{ coin_flips.share | pct }}, {{ coin_flips.source }}). Day {{ links_back[0].day }} flipped {{ links_back[0].figure.flips | thousands }}.

Five requests, {{ batching.policies.one_at_a_time.steps }} steps one at a time, {{ batching.policies.continuous.steps }} continuous ({{ batching.source }}).

{{ m.hashtags(hashtags) }}
"""
THREAD = """{{ coin_flips.heads | thousands }} heads.

![the flips](flips_bar.png)
---
{{ coin_flips.source }}, {{ coin_flips.flips | thousands }} flips.
"""


def write_day(tmp_path: Path) -> tuple[Path, Path]:
    days, templates = tmp_path / "days", tmp_path / "templates"
    days.mkdir()
    (days / "day09.yaml").write_text(SPEC)
    (days / "day08.yaml").write_text(EARLIER)
    (days / "day09.workload.csv").write_text(TRACE)
    (templates / "day09").mkdir(parents=True)
    shutil.copy(REPO / "templates" / "_macros.j2", templates / "_macros.j2")
    for name in ("linkedin.md.j2", "toot.md.j2"):
        (templates / "day09" / name).write_text(POST)
    (templates / "day09" / "x-thread.md.j2").write_text(THREAD)
    return days / "day09.yaml", templates


def test_a_toy_section_chart_platform_and_policy_build_a_day(toy_kinds: None, tmp_path: Path) -> None:
    from helpers import assert_platform_counts_its_example

    assert_platform_counts_its_example(platform_registry.PLATFORMS.get("toot"))  # the shared contract
    (tmp_path / "example").mkdir()
    assert_section_runs_its_example(sections.get("coin_flips"), tmp_path / "example")  # the section's
    spec_path, templates = write_day(tmp_path)
    report = pipeline.build(spec_path, tmp_path / "out", templates_root=templates)
    folder = report.folder
    results = json.loads((folder / "results.json").read_text())
    # The experiment ran through the registry, with the same seeded draw as run here directly.
    heads = int(np.random.default_rng(3).integers(0, 2, 1000).sum())
    assert results["coin_flips"] == {
        "source": "simulated",
        "flips": 1000,
        "heads": heads,
        "share": heads / 1000,
    }
    # The toy policy ran beside a built-in one, on the hand-worked trace (TRACE): 14 tokens in
    # 6 steps on 4 slots is 58.3 % busy; one at a time keeps its one slot busy every step.
    assert report.summary == [
        "batching (simulated): continuous 6 steps 58.3%, one_at_a_time 14 steps 100.0%",
        f"coin flips (simulated): {heads} heads",
    ]
    # Templates see the section under its key; the link back cites the earlier toy day.
    toot = (folder / "toot.md").read_text()
    assert toot.startswith(f"Day 9 of 60 days of system design: {heads:,} heads in 1,000 flips")
    assert "Day 8 flipped 10." in toot
    assert "Five requests, 14 steps one at a time, 6 continuous (simulated)." in toot
    # The third platform's draft was checked by the build and by the day-folder check.
    assert results["checks"]["toot"] == [
        {"name": "length", "value": utf16_length(toot), "limit": TOOT_LIMIT, "ok": True}
    ]
    assert check_day_dir(folder).counts["toot.md"][0].limit == TOOT_LIMIT
    # The chart was drawn at its registered size, and its alt text held to every platform.
    chart, comparison = results["charts"]
    assert (chart["name"], chart["platform"], chart["file"]) == ("flips_bar", "x", "flips_bar.png")
    assert [c.limit for c in check_day_dir(folder).counts["flips_bar.alt.txt"]] == [1500, 1000, 250]
    # A built-in chart draws the toy policy, in the colour its registration gave it.
    assert comparison["name"] == "utilisation"
    with Image.open(folder / comparison["file"]) as picture:
        pixels = np.asarray(picture.convert("RGB")).reshape(-1, 3)
    assert (pixels == (0x12, 0x34, 0x56)).all(axis=1).sum() > 1000  # its bars, not a stray pixel
    # The threaded platform was numbered; the review page shows the new section and platform.
    assert (folder / "x-thread.md").read_text().startswith(f"1/2 {heads:,} heads.")
    page = (folder / "index.html").read_text()
    assert '<section id="toot" class="toot">' in page and "Coin flips: simulated" in page
    assert "<h3>Coin flips" in page or "Coin flips</h" in page


def test_a_toy_platform_over_its_limit_stops_the_build(toy_kinds: None, tmp_path: Path) -> None:
    spec_path, templates = write_day(tmp_path)
    (templates / "day09" / "toot.md.j2").write_text(POST.replace("\n\n", " " + "word " * 120 + "\n\n", 1))
    with pytest.raises(pipeline.ChecksFailed, match=r"toot.md: length: \d+/500"):
        pipeline.build(spec_path, tmp_path / "out", templates_root=templates)
    assert not (tmp_path / "out" / "day09").exists()


def test_registered_names_are_validated_like_built_in_ones(toy_kinds: None, tmp_path: Path) -> None:
    spec_path, _ = write_day(tmp_path)
    spec_path.write_text(SPEC.replace("flips: 1000", "flips: 0"))
    with pytest.raises(UserError, match=r"coin_flips.flips: must be at least 1, got 0"):
        load_spec(spec_path)
    spec_path.write_text(SPEC.replace("coin_flips: {flips: 1000, seed: 3}\n", ""))
    with pytest.raises(UserError, match=r"chart 'flips_bar' needs a 'coin_flips' section"):
        load_spec(spec_path)
    spec_path.write_text(SPEC.replace("coin_flips:", "coin_flip:"))
    with pytest.raises(UserError, match=r"unknown field 'coin_flip'; did you mean 'coin_flips'"):
        load_spec(spec_path)


def test_without_the_registration_the_names_are_unknown(tmp_path: Path) -> None:
    spec_path, _ = write_day(tmp_path)
    with pytest.raises(UserError, match=r"unknown field 'coin_flips'"):
        load_spec(spec_path)


def test_the_chart_rules_hold_for_a_toy_chart(toy_kinds: None, tmp_path: Path) -> None:
    """The shared chart tests, run with the toy chart registered: they loop over every chart,
    and draw the toy from the sample it was registered with. Sizes, bytes, alt text, type
    sizes, colours, nothing off the image and its source named: the built-in charts' rules."""
    import test_charts as rules

    results = rules.day37_results()
    drawn = {"flips_bar": rules._draw_from_scratch("flips_bar", results, tmp_path)}
    rules.test_every_chart_is_at_its_platform_size(drawn)
    rules.test_pngs_carry_no_timestamp_or_software_tag(drawn)
    rules.test_every_chart_is_opaque_and_its_png_is_the_canvas(results, drawn)
    rules.test_alt_text_is_saved_beside_and_fits_both_platforms(drawn)
    assert "flips_bar" in rules._still()  # the loops below draw it too
    rules.test_each_chart_names_where_its_numbers_came_from(results)
    rules.test_text_is_big_enough_for_a_phone_and_has_no_emoji(results)
    rules.test_colours_are_okabe_ito_or_grey(results)
    rules.test_no_text_spills_off_the_image_or_onto_the_title(results)
