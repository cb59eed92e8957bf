"""Templates hold words, never numbers: every figure must come from the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.render import posts
from engine.render.posts import digits_outside_jinja, numbers_inside_jinja

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def all_templates() -> list[Path]:
    return sorted(p for p in TEMPLATES.rglob("*.j2") if p.parent.name != "review")


def test_there_are_templates_to_check():
    assert any(p.parent.name == "day37" for p in all_templates())


@pytest.mark.parametrize("template", all_templates(), ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_no_digit_outside_a_jinja_expression(template: Path):
    assert digits_outside_jinja(template.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("template", all_templates(), ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_no_number_smuggled_in_as_a_jinja_constant(template: Path):
    assert numbers_inside_jinja(template.read_text(encoding="utf-8")) == []


def test_the_constant_rule_catches_smuggled_figures_but_not_formatting():
    assert numbers_inside_jinja('{{ "14.3%" }} and {% set m = 5.05 %}{{ m }}') == [
        (1, "'14.3%'"),
        (1, "5.05"),
    ]
    assert numbers_inside_jinja("{{ x | gib(0) }} {{ rows[-1].n | fixed(1) }} {{ rows[0] }}") == []
    assert numbers_inside_jinja("{% if waits > 0 %}x{% endif %}") == []


def test_the_digit_rule_catches_a_typed_number():
    assert digits_outside_jinja("static: {{ st.utilisation | pct }} busy, 5x faster") == [
        (1, "static:  busy, 5x faster")
    ]
    assert digits_outside_jinja("{% if a > 2 %}ok{% endif %} {{ n | gib(2) }}") == []
    # Line numbers survive a multi-line Jinja block.
    assert digits_outside_jinja("{% if a %}\n{% endif %}\nnow 3 of them") == [(3, "now 3 of them")]


@pytest.mark.parametrize(
    "value, expected",
    [(2048, "2,048"), (32768, "32,768"), (64, "64"), (1148.0, "1,148"), (115.94, "115.9")],
)
def test_thousands(value, expected):
    assert posts.thousands(value) == expected


def test_percent_multiple_and_sizes():
    assert posts.pct(13280 / (16 * 5797)) == "14.3%"
    assert posts.pct(13280 / (16 * 1148)) == "72.3%"
    assert posts.multiple(5797 / 1148) == "5.0x"
    assert posts.gib(2**30) == "1.00 GiB"
    assert posts.gib(16 * 2**30, 0) == "16 GiB"
    assert posts.ms(0.02) == "20 ms"
    assert posts.hashtag("#LLM") == "#LLM"


def test_thread_numbering_follows_the_posts():
    text = "hook\n---\nsecond\n\n---\n\nthird\n"
    assert posts.number_thread(text) == "1/3 hook\n---\n2/3 second\n---\n3/3 third\n"


@pytest.mark.parametrize(
    "words",
    [
        "it dies at 2 am",
        "at 11:30 pm",
        "up 24/7",
        "Day 4's queues",
        "the p99 latency",
        "an H200",
        "over IPv6",
    ],
)
def test_idioms_with_digits_are_words_not_figures(words):
    """A time of day, 24/7, a day of the series and a name with digits in it type no figure."""
    assert digits_outside_jinja(words) == []


@pytest.mark.parametrize(
    "words", ["5x faster", "took 200 ms", "72.3% busy", "Day 4.5", "top 3", "x2 faster", "room 101", "v0.33"]
)
def test_a_typed_figure_beside_an_idiom_is_still_refused(words):
    assert digits_outside_jinja(f"at 2 am: {words}") == [(1, f"at 2 am: {words}")]


# ---- compiled templates kept on disk ------------------------------------------------------------


def test_a_new_process_renders_from_the_kept_compiled_template(tmp_path, monkeypatch):
    """What a second `make day37` sees (memory cleared, the cache folder kept): no template is
    compiled again and the draft is the same text; an edited template, a damaged entry or other
    sandbox code is compiled afresh, to the new text."""
    from engine.render import render_env, template_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "templates"
    (root / "day99").mkdir(parents=True)
    draft = root / "day99" / "post.j2"
    draft.write_text("{{ title }} in {{ n | thousands }} steps\n", encoding="utf-8")
    compiled: list[str | None] = []
    real = render_env.Sandbox.compile

    def counted(self, source, name=None, filename=None, raw=False, defer_init=False):
        compiled.append(name)
        return real(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(render_env.Sandbox, "compile", counted)

    def fresh_process_render() -> str:
        template_cache.DRAFTS.clear()  # a new process starts with nothing in memory
        return posts.render(posts.environment(root), "day99/post.j2", {"title": "Day 99", "n": 5797})

    assert fresh_process_render() == "Day 99 in 5,797 steps\n" and compiled == ["day99/post.j2"]
    (entry,) = template_cache.DRAFTS.folder().iterdir()
    compiled.clear()
    assert fresh_process_render() == "Day 99 in 5,797 steps\n" and compiled == []  # read from disk

    draft.write_text("{{ title }}: {{ n | thousands }}\n", encoding="utf-8")
    assert fresh_process_render() == "Day 99: 5,797\n" and compiled == ["day99/post.j2"]

    entry.write_bytes(entry.read_bytes()[:-7])  # cut short: marshal cannot read it
    compiled.clear()
    assert fresh_process_render() == "Day 99: 5,797\n" and compiled == ["day99/post.j2"]

    old_folder = template_cache.DRAFTS.folder()
    monkeypatch.setattr(template_cache, "code_digest", lambda: "another-sandbox")
    monkeypatch.setattr(template_cache.DRAFTS, "_pruned", False)
    compiled.clear()
    assert fresh_process_render() == "Day 99: 5,797\n" and compiled == ["day99/post.j2"]
    assert template_cache.DRAFTS.folder().name == "drafts-another-sandbox" and not old_folder.exists()
