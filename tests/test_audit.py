"""The number audit (engine.audit) on drafts worked by hand: each number read, traced to the
render, the results or the spec's metadata, and the rest reported typed or stale with its line."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from engine import audit
from engine.cli import main

from helpers import copy_built

# Results as a build writes them, cut down to what the drafts below quote. The texts each value
# prints as are worked out by hand: 0.7229 → "72.3%" (pct), 5.0497 → "5.0x" (multiple), 0.00732 s
# → "7.32 ms" (ms(2)), 1148 → "1,148" (thousands).
RESULTS = {
    "day": 37,
    "series": {"name": "60 days of system design", "length": 60},
    "batching": {
        "policies": {
            "static": {"utilisation": 0.1432, "steps": 5797},
            "continuous": {"utilisation": 0.7229, "steps": 1148},
        },
        "multiple": 5.049651567944251,
        "step": {"seconds": 0.00732},
    },
    "compare": [{"label": "Llama-2-7B on an H100 80GB", "max_requests": 58}],
    "measured": {"cuda": "13.0"},  # a number kept as text: printed as it is
    "checks": {"linkedin": [{"name": "length", "value": 741}]},  # counts of the draft: no figure
}

RENDER = """Day 37 of 60 days of system design.

static: 14.3% busy, 5,797 steps
continuous: 72.3% busy, 1,148 steps, 5.0x the throughput
One step took 7.32 ms. Llama-2-7B on an H100 80GB: 58 requests fit.

More at https://example.com/posts/2024/11/30/day-99.html

#SystemDesign #Top10 #100DaysOfCode
"""


def findings(draft: str, results: dict = RESULTS, **renders: str | None) -> list[audit.Finding]:
    return audit.audit_draft("linkedin.md", draft, audit.index(results), **renders)


def test_every_number_is_read_and_traced_to_the_results() -> None:
    # Read: every figure, and the day and the series length; not read: the hyphenated name's
    # digits, the URL's and the hashtags' digits.
    read = [n.text for n in audit.numbers_in(RENDER)]
    assert read == ["37", "60", "14.3%", "5,797", "72.3%", "1,148", "5.0x", "7.32 ms", "80GB", "58"]
    edited = RENDER.replace("One step took", "Each decode step took")
    assert findings(edited) == []  # against the results alone: each prints from a value
    assert findings(edited, fresh=RENDER) == []


def test_a_number_the_person_typed_is_named_with_its_line_and_words() -> None:
    typed = RENDER.replace("72.3%", "74.1%")
    [finding] = findings(typed, fresh=RENDER)
    assert (finding.line, finding.column, finding.text, finding.stale) == (4, 12, "74.1%", False)
    assert finding.line_text == "continuous: 74.1% busy, 1,148 steps, 5.0x the throughput"
    assert str(finding).startswith("linkedin.md line 4: 74.1% typed by hand")
    # Its words: up to six either side, the rest of a long line cut.
    assert '("continuous: 74.1% busy, 1,148 steps, 5.0x the throughput")' in str(finding)
    long = typed.replace("the throughput", "the throughput of the same GPU, same requests")
    [finding] = findings(long, fresh=RENDER)
    assert finding.words == "continuous: 74.1% busy, 1,148 steps, 5.0x the throughput …"
    # The same without a render on record: the results alone do not print 74.1%.
    assert [f.text for f in findings(typed)] == ["74.1%"]


def test_the_day_and_the_series_trace_to_the_spec_and_a_wrong_one_does_not() -> None:
    assert findings(RENDER.replace("Day 37 of 60", "Day 38 of 60")) != []
    assert [f.text for f in findings(RENDER.replace("Day 37 of 60", "Day 38 of 61"))] == ["38", "61"]


def test_an_earlier_day_named_as_one_is_a_reference_and_a_later_one_is_read() -> None:
    """ "as on Day 15" in Day 37's post points back to a day of the series, as a template may
    write it; "Day 38" has not been written yet, and "Day 15.5" or "15 days" name no day."""
    said = RENDER + "The same queue as on Day 15, and day 1 before it.\n"
    assert findings(said) == []
    assert [f.text for f in findings(RENDER + "More on Day 38.\n")] == ["38"]
    assert [f.text for f in findings(RENDER + "As in Day 15.5, for 15 days.\n")] == ["15.5", "15"]
    # in Day 15's own post, "Day 37" is a day not written yet
    assert [f.text for f in findings(said, {**RESULTS, "day": 15})] == ["37"]


def test_a_number_the_results_keep_as_text_traces_as_written() -> None:
    assert findings(RENDER.replace("One step took", "On CUDA 13.0 one step took")) == []
    assert [f.text for f in findings(RENDER.replace("One step took", "On CUDA 12.4 one step took"))] == [
        "12.4"
    ]


def test_a_ratio_of_two_figures_traces_as_the_ratio_filter_writes_it() -> None:
    # 8.4 µs / 92 ns = 91.3, a ratio of one dimension: written as a count, "91".
    lab = {**RESULTS, "lab": {"ram": {"value": 92, "unit": "ns"}, "rtt": {"value": 8.4, "unit": "µs"}}}
    assert findings(RENDER + "A round trip is 91 RAM reads.\n", lab) == []
    assert [f.text for f in findings(RENDER + "A round trip is 95 RAM reads.\n", lab)] == ["95"]


def test_a_figure_no_filter_writes_is_typed_however_close() -> None:
    # Each traced text is what some filter writes of a value above: 72.29% and 72% are
    # pct(0.7229, 2) and pct(0.7229, 0), 0.72 is fixed(0.7229, 2), 7.3 ms is duration(0.00732),
    # 5.05x is multiple(5.0497, 2); a space before the unit, × for x, are spellings of the same.
    for traced in ("72.29%", "72%", "0.72", "7.3 ms", "7.32ms", "5.0×", "5.05x"):
        assert findings(RENDER.replace("72.3%", traced)) == [], traced
    for typed in ("72.4%", "7.4 ms", "5.2x", "16k", "741"):
        assert [f.text for f in findings(RENDER.replace("72.3%", typed))] == [typed], typed


def test_a_percentage_or_multiple_needs_the_filter_that_writes_its_sign() -> None:
    # 1148 prints as "1,148" and 0.7229 as "72.3" (fixed), but no filter writes "1,148%" or
    # "72.3x": pct and multiple write their own sign, of the value as it is (1148 | multiple(0)
    # is "1,148x", and traces).
    assert findings(RENDER.replace("72.3%", "1,148x")) == []
    for typed in ("1,148%", "72.3x"):
        assert [f.text for f in findings(RENDER.replace("72.3%", typed))] == [typed]
    # A time's unit may be the template's words after a bare number ({{ x | fixed(0) }} ms).
    assert findings(RENDER.replace("7.32 ms", "1,148 ms")) == []


def test_a_number_kept_from_the_previous_render_is_stale_with_what_the_results_say_now() -> None:
    now = json.loads(json.dumps(RESULTS))
    now["batching"]["policies"]["continuous"]["utilisation"] = 0.7012
    fresh = RENDER.replace("72.3%", "70.1%")
    # The person's edit of the old render, kept whole (a conflict), still says 72.3%.
    theirs = RENDER.replace("continuous: 72.3% busy", "continuous batching: 72.3% of the GPU busy")
    [finding] = findings(theirs, now, fresh=fresh, previous=RENDER)
    assert (finding.line, finding.text, finding.stale, finding.now) == (4, "72.3%", True, "70.1%")
    assert "72.3% stale: the results now say 70.1%" in str(finding)
    # Moved to a sentence of their own, it is still the old render's figure.
    moved = fresh + "\nThe GPU was busy 72.3% of the time.\n"
    [finding] = findings(moved, now, fresh=fresh, previous=RENDER)
    assert (finding.line, finding.stale) == (11, True)
    # Without the previous render the same number is only typed by hand.
    [finding] = findings(theirs, now, fresh=fresh)
    assert not finding.stale


def test_a_time_of_day_is_no_figure_however_the_measurement_moved_it() -> None:
    """'Measured … 2026-12-03 17:48 UTC': a rerun an hour later says 18:51. The hour is read as
    neither a figure nor a stale one ("17 stale: the results now say 17" named the clock)."""
    assert [n.text for n in audit.numbers_in("Measured 2026-12-03 17:48 UTC, at 9:05 am.")] == ["2026"]
    assert [n.text for n in audit.numbers_in("a ratio of 17:1, 3:2")] == ["17", "3"]  # not a time
    # nothing says a bare 1:30 is a clock (it may be a duration): it is read
    assert [n.text for n in audit.numbers_in("the first 1:30 of the talk, 2026-01-05 9:30")] == ["1", "2026"]
    before = RENDER + "\nMeasured on AMD EPYC, 2026-12-03 17:48 UTC.\n"
    fresh = RENDER + "\nMeasured on AMD EPYC, 2026-12-03 18:51 UTC.\n"
    theirs = before.replace("One step took", "Each decode step took")
    assert findings(theirs, fresh=fresh, previous=before) == []  # was "17 stale: … now say 18"


def test_an_accepted_number_passes_and_is_posted_plain() -> None:
    accepted = RENDER.replace("72.3%", "{=74.1%}").replace("5,797 steps", "5,800 steps")
    [finding] = findings(accepted, fresh=RENDER)
    assert finding.text == "5,800"  # the typed one beside it is still named
    assert audit.strip_accepted(accepted).splitlines()[3].startswith("continuous: 74.1% busy")
    # Columns are those of the posted line, the marker stripped: "static: 14.3% busy, " is 20.
    assert (finding.line, finding.column) == (3, 20)
    assert findings(RENDER.replace("72.3%", "{=74.1%}"), fresh=RENDER) == []


def test_numbers_in_urls_hashtags_links_and_thread_labels_are_not_read() -> None:
    text = (
        "1/3 See https://example.com/2024/11/30 and www.example.org/v2/12 and github.com/a/b-60-days.\n"
        "![the p99 chart](chart-2024.png) #Top10 #100DaysOfCode p99 H200 24/7 at 2 am\n"
        "---\n"
        "2/3 nothing here 2/3\n"
        "---\n"
        "3/3 done\n"
    )
    assert audit.numbers_in(text, thread=True) == []
    assert audit.audit_draft("x-thread.md", text, audit.index(RESULTS), thread=True) == []
    # In a draft that is no thread, "2/3" is read; what follows its slash is a denominator or a
    # path's part, as in "v2/12", and not read.
    assert [n.text for n in audit.numbers_in("it was 2/3 done")] == ["2"]


def test_the_review_page_marks_a_finding_in_the_piece_it_shows() -> None:
    typed = RENDER.replace("72.3%", "74.1%")
    [finding] = findings(typed, fresh=RENDER)
    post = typed.split("\n\n")[1]  # the paragraph, as a thread card or the fold would cut it
    pieces = audit.segments(post, [finding])
    assert "".join(words for words, _ in pieces) == post
    assert [(w, why) for w, why in pieces if why] == [("74.1%", finding.why)]


def test_a_rebuild_that_changes_nothing_keeps_the_earlier_previous_render() -> None:
    first = audit.record({"linkedin.md": "new"}, {"linkedin.md": "old"})
    assert first == {"drafts": {"linkedin.md": {"render": "new", "previous": "old"}}}
    again = audit.record({"linkedin.md": "new"}, {"linkedin.md": "new"}, first)
    assert again["drafts"]["linkedin.md"]["previous"] == "old"
    assert audit.record({"linkedin.md": "new"}, {})["drafts"]["linkedin.md"]["previous"] is None


def test_check_names_a_typed_number_and_strict_fails(
    built_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    day = copy_built(built_out, tmp_path / "out") / "day37"
    draft = day / "linkedin.md"
    text = draft.read_text(encoding="utf-8")
    assert main(["check", "--strict", str(day)]) == 0  # the build's own drafts: all traced
    line = next(n for n, words in enumerate(text.splitlines(), 1) if "72.3%" in words)
    assert text.count("72.3%") == 1
    draft.write_text(text.replace("72.3%", "74.1%"), encoding="utf-8")
    capsys.readouterr()

    assert main(["check", str(day)]) == 0  # reported, not a broken rule
    out = capsys.readouterr().out
    [reported] = [row for row in out.splitlines() if "NUMBER" in row]
    assert f"linkedin.md line {line}: 74.1% typed by hand" in reported
    assert main(["check", "--strict", str(day)]) == 2

    draft.write_text(text.replace("72.3%", "{=74.1%}"), encoding="utf-8")
    assert main(["check", "--strict", str(day)]) == 0


def test_a_build_warns_of_a_typed_number_and_its_page_marks_it(
    built_out: Path, tmp_path: Path, monkeypatch
) -> None:
    """A rebuild with no edit makes no audit index (most of a warm build's audit); one with a
    typed number warns of it, and the page marks it."""
    from engine.pipeline import build

    from helpers import DAYS

    out = copy_built(built_out, tmp_path / "out")
    indexed = []
    real_index = audit.index
    monkeypatch.setattr(audit, "index", lambda results: indexed.append(1) or real_index(results))
    audit._index_of.cache_clear()
    build(DAYS / "day37.yaml", out)
    assert indexed == []  # every draft is the engine's own: nothing to trace, no index made
    draft = out / "day37" / "linkedin.md"
    draft.write_text(draft.read_text(encoding="utf-8").replace("72.3%", "74.1%"), encoding="utf-8")
    report = build(DAYS / "day37.yaml", out)
    assert indexed and [w for w in report.warnings if "74.1% typed by hand" in w]
    page = (out / "day37" / "index.html").read_text(encoding="utf-8")
    assert '<mark class="untraced" title="typed by hand: no result prints as 74.1%">74.1%</mark>' in page

    # Accepted, it is no longer marked, and the page shows and copies it without its marker.
    from engine.render import review

    draft.write_text(draft.read_text(encoding="utf-8").replace("74.1%", "{=74.1%}"), encoding="utf-8")
    page = review.write_day_page(out / "day37").read_text(encoding="utf-8")
    assert "<mark" not in page and "{=" not in page
    copied = re.search(r'data-kind="linkedin" data-copy="([^"]*)"', page)
    assert copied is not None and "continuous batching: 74.1% GPU utilisation" in html.unescape(
        copied.group(1)
    )


def test_a_figure_kept_through_a_rebuild_that_changed_it_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """New numbers from the spec (16 → 20 slots); the person's edit touched the very words of
    the utilisation, so the merge conflicts and their file keeps the old 72.3%."""
    import shutil

    from helpers import DAYS, lean_spec, unlinked

    days = tmp_path / "days"
    shutil.copytree(DAYS, days, ignore=shutil.ignore_patterns("*.measured"))
    spec = days / "day37.yaml"
    spec.write_text(unlinked(lean_spec(spec.read_text())))
    out = tmp_path / "out"
    assert main(["build", str(spec), "--out", str(out)]) == 0
    draft = out / "day37" / "linkedin.md"
    text = draft.read_text(encoding="utf-8")
    assert text.count("72.3% GPU utilisation") == 1
    draft.write_text(text.replace("72.3% GPU utilisation", "72.3%, GPU utilisation"), encoding="utf-8")
    spec.write_text(spec.read_text().replace("\n  slots: 16\n", "\n  slots: 20\n"))
    capsys.readouterr()
    assert main(["build", str(spec), "--out", str(out)]) == 0
    assert (out / "day37" / "linkedin.new.md").is_file()  # the conflict: their file as they left it

    results = json.loads((out / "day37" / "results.json").read_text())
    now = audit.spelling(f"{results['batching']['policies']['continuous']['utilisation'] * 100:.1f}%")
    assert now != "72.3%"
    err = capsys.readouterr().err
    assert "warning: linkedin.md line " in err and f"72.3% stale: the results now say {now}" in err
    assert main(["check", "--strict", str(out / "day37")]) == 2
    reported = [row for row in capsys.readouterr().out.splitlines() if "NUMBER" in row]
    assert any(f"72.3% stale: the results now say {now}" in row for row in reported)


def test_an_edited_alt_text_is_audited_too(
    built_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    day = copy_built(built_out, tmp_path / "out") / "day37"
    alt = day / "kv_fit.alt.txt"
    text = alt.read_text(encoding="utf-8")
    assert "2,048-token context: 64 fit" in text
    alt.write_text(
        text.replace("2,048-token context: 64 fit", "2,048-token context: 65 fit"), encoding="utf-8"
    )
    capsys.readouterr()
    assert main(["check", "--strict", str(day)]) == 2
    [reported] = [row for row in capsys.readouterr().out.splitlines() if "NUMBER" in row]
    assert "kv_fit.alt.txt line 1: 65 typed by hand" in reported
    # Accepted, it passes, and the platform counts and the page read it without its marker.
    alt.write_text(text.replace("64 fit", "{=65} fit"), encoding="utf-8")
    assert main(["check", "--strict", str(day)]) == 0
    out = capsys.readouterr().out
    assert f"kv_fit.alt.txt: alt text (x) {len(text.strip())}/" in out


@pytest.mark.parametrize("run", ["1.", "v1.", "ab-"])
def test_a_long_dotted_run_is_read_in_one_pass(run: str) -> None:
    """A draft of one long dotted run: the bare-link pattern used to scan the rest of the run
    from each of its starts (this 60 KB took about 25 s; a 64 KB draft, half a minute to check);
    bounded by DNS's own limits it reads the run once. Links are still found beside it. The cap
    here is generous: it stops a hostile draft, not a slow machine."""
    import time

    text = "see github.com/anurag629/x " + run * (60_000 // len(run)) + " and docs.python.org/3/"
    started = time.process_time()
    spans = [m.group() for m in audit._URL.finditer(text)]
    numbers = audit.numbers_in(text)
    assert time.process_time() - started < 3.0
    assert spans == ["github.com/anurag629/x", "docs.python.org/3/"]
    assert all(n.text not in ("3", "629") for n in numbers)


def test_a_pasted_table_of_untraced_numbers_is_listed_twenty_then_counted() -> None:
    """Each draft's first twenty findings one a line, then how many more: a pasted table of a
    thousand numbers was a thousand warnings. Each finding's words come from a window around
    it, on a line of any length."""
    line = " ".join(f"{k}.5x" for k in range(20_000))
    many = [
        audit.Finding("linkedin.md", 1, line.index(f" {k}.5x") + 1, f"{k}.5x", line) for k in range(1, 26)
    ]
    other = audit.Finding("x-thread.md", 1, 0, "0.5x", "0.5x here")
    lines = audit.listed([*many, other])
    assert lines[:20] == [str(f) for f in many[:20]] and lines[20] == str(other)
    assert lines[21:] == [
        "linkedin.md: 5 more numbers that trace to no result (each marked on the review page)"
    ]
    assert all(len(f.words) < 2 * audit.WINDOW for f in many)
    assert many[0].words.startswith("0.5x 1.5x 2.5x") and "…" in many[0].words
