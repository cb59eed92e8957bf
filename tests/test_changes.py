"""What a rebuild changed: figures by human names, old → new, and a word diff of each draft."""

from __future__ import annotations

from engine.outdir import changes

OLD = {
    "day": 37,
    "inputs": {"batching": {"slots": 16}},
    "checks": {"linkedin": [{"value": 1200}]},
    "batching": {
        "slots": 16,
        "multiple": 5.05,
        "policies": {
            "continuous": {"utilisation": 0.723, "steps": 1148, "series": {"busy": [0.1, 0.2, 0.3]}},
            "static": {"utilisation": 0.143, "steps": 5797},
        },
    },
    "kv_cache": {
        "main": {
            "plan": {
                "contexts": [{"context": 2048, "max_requests": 64}, {"context": 8192, "max_requests": 16}]
            }
        }
    },
}


def new_results() -> dict:
    import copy

    new = copy.deepcopy(OLD)
    new["inputs"]["batching"]["slots"] = 20  # the spec echo: not a figure
    new["checks"]["linkedin"][0]["value"] = 1210  # a character count: not a figure
    new["batching"]["policies"]["continuous"]["utilisation"] = 0.741
    new["batching"]["policies"]["continuous"]["series"]["busy"] = [0.5, 0.5, 0.5]  # chart data
    new["batching"]["policies"]["static"]["utilisation"] = 0.14300001  # noise below 0.1%
    new["kv_cache"]["main"]["plan"]["contexts"][1]["max_requests"] = 18
    new["batching"]["multiple"] = 5.2
    return new


def test_figures_that_changed_have_human_names_and_formats():
    found = changes.compare_figures(OLD, new_results())
    assert [(f["name"], f["old"], f["new"]) for f in found] == [
        ("multiple", "5.05x", "5.2x"),
        ("continuous utilisation", "72.3%", "74.1%"),
        ("max requests at context 8,192", "16", "18"),
    ]


def test_figures_the_drafts_quote_come_first():
    found = changes.compare_figures(OLD, new_results(), quoted="it fits 16 requests at 8,192 tokens")
    assert found[0]["name"] == "max requests at context 8,192"
    # '16' inside '2,016' or '16.5' is not the figure quoted
    assert not changes._quotes("2,016 and 16.5 and x16", "16")


def test_a_lab_figure_is_named_by_its_label_and_shown_with_its_unit():
    """A lab's figure is one value with a unit: its change reads "RAM, random read 238 ns →
    250 ns", not "figures ram random value 237.6 → 250"; a table cell the same, named by its
    table and row. How the lab ran (its running time, its output's length) and the machine's
    size are not figures: a rerun that moved only them changed none."""

    def lab(ram_ns: float, cell_ms: float, wall: float, memory: int) -> dict:
        return {
            "lab": {
                "wall_seconds": wall,
                "transcript": {"lines": int(wall * 10)},
                "machine": {"cores": 2, "memory_bytes": memory},
                "figures": {
                    "ram_random": {"value": ram_ns, "unit": "ns", "label": "RAM, random read"},
                    "scratch": {"value": 128.0, "unit": "MiB"},
                },
                "tables": {
                    "t": {
                        "records": [
                            {
                                "size": {"value": 100, "unit": "count"},
                                "time": {"value": cell_ms, "unit": "ms"},
                            }
                        ]
                    }
                },
            }
        }

    assert changes.compare_figures(lab(237.6, 1.5, 0.4, 2**34), lab(237.6, 1.5, 9.1, 2**34 + 4096)) == []
    changed = changes.compare_figures(lab(237.6, 1.5, 0.4, 2**34), lab(250.0, 0.25, 0.5, 2**34))
    assert [(c["name"], c["old"], c["new"]) for c in changed] == [
        ("RAM, random read", "238 ns", "250 ns"),
        ("t time #1", "1.5 ms", "250 µs"),
    ]


def test_summary_line():
    figures = changes.compare_figures(OLD, new_results())
    line = changes.summary({"previous": True, "figures": figures})
    assert line == (
        "3 figures changed: multiple 5.05x → 5.2x, continuous utilisation 72.3% → 74.1%, "
        "max requests at context 8,192 16 → 18"
    )
    assert changes.summary({"previous": True, "figures": []}) == "no figure changed since the last build"
    assert changes.summary({"previous": False, "figures": []}) is None
    many = [{"name": f"f{k}", "old": str(k), "new": str(k + 1)} for k in range(6)]
    assert changes.summary({"previous": True, "figures": many}, limit=2) == (
        "6 figures changed: f0 0 → 1, f1 1 → 2, … (all 6 on the review page)"
    )
    # One quantity under two names is said once; the count still accounts for both.
    twice = [*many[:2], {"name": "f1 again", "old": "1", "new": "2"}]
    assert changes.summary({"previous": True, "figures": twice}) == (
        "3 figures changed: f0 0 → 1, f1 1 → 2 (and 1 more under another name, the same change; "
        "all on the review page)"
    )


def test_word_diff_marks_only_the_changed_words():
    old = "The GPU is busy 72.3% of the time.\nStatic: 14.3%."
    new = "The GPU is busy 74.1% of the time.\nStatic: 14.3%."
    assert changes.word_diff(old, new) == [
        ["=", "The GPU is busy "],
        ["-", "72.3%"],
        ["+", "74.1%"],
        ["=", " of the time.\nStatic: 14.3%."],
    ]
    segments = changes.word_diff("a b c", "a x c d")
    assert "".join(t for k, t in segments if k != "+") == "a b c"
    assert "".join(t for k, t in segments if k != "-") == "a x c d"


def test_only_the_paragraphs_that_changed_are_shown():
    old = "Hook.\n\nBusy 72.3%.\n\nSame.\n\nStatic 14.3%.\n\nEnd."
    new = "Hook.\n\nBusy 74.1%.\n\nSame.\n\nStatic 15.0%.\n\nEnd."
    shown = changes.changed_paragraphs(changes.word_diff(old, new))
    assert [p["skipped"] for p in shown] == [True, True]
    assert shown[0]["segments"] == [["=", "Busy "], ["-", "72.3%."], ["+", "74.1%."]]
    assert shown[1]["segments"] == [["=", "Static "], ["-", "14.3%."], ["+", "15.0%."]]
    first = changes.changed_paragraphs(changes.word_diff("A b.\n\nC.", "A x.\n\nC."))
    assert [p["skipped"] for p in first] == [False]
