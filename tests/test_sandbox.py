"""A day someone else wrote is safe to build: templates run sandboxed, on a budget, and cannot
type a number past the rules.

Each attack below is a template a stranger could send; each must end as one UserError naming
the template, and quickly (the caps stop it, not the machine running out of memory or time).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine import limits
from engine.errors import UserError
from engine.render import posts, render_env, review, slides

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
NAME = "day05/t.md.j2"
SHOWN = f"templates/{NAME}"
FAST_S = 3.0  # every refusal here takes milliseconds; the step cap trips within a second

CONTEXT: dict[str, Any] = {
    "day": 37,
    "title": "T",
    "x": 1.6210526315789475,  # 308 / 190: what `{{ x ~ "" }}` printed before the sandbox
    "n": 8,
    "rows": list(range(100)),
    "names": {"static": "static batching"},
}


def render_case(tmp_path: Path, body: str, context: dict[str, Any] | None = None) -> str:
    """What the build does with one draft template: the typed-number check, then the render."""
    root = tmp_path / "templates"
    (root / "day05").mkdir(parents=True, exist_ok=True)
    (root / NAME).write_text(body, encoding="utf-8")
    posts.check_no_typed_numbers(root, [NAME])
    return posts.render(posts.environment(root), NAME, CONTEXT if context is None else context)


def refused(tmp_path: Path, body: str, context: dict[str, Any] | None = None) -> str:
    """The one line a hostile template ends as; it must come fast and name the template."""
    started = time.perf_counter()
    with pytest.raises(UserError) as err:
        render_case(tmp_path, body, context)
    assert time.perf_counter() - started < FAST_S
    line = err.value.line()
    assert line.startswith(SHOWN + ":") and "\n" not in line
    return line


# ---- every environment is the sandbox ------------------------------------------------------------


def test_drafts_carousel_and_review_pages_render_in_the_immutable_sandbox(tmp_path):
    assert isinstance(posts.environment(tmp_path), ImmutableSandboxedEnvironment)
    assert isinstance(review._environment(), ImmutableSandboxedEnvironment)
    # The carousel's words go through the drafts' environment: a hostile slide is refused there.
    root = tmp_path / "templates"
    (root / "day05" / "carousel").mkdir(parents=True)
    (root / "day05" / "carousel" / "slides.md.j2").write_text(
        "## cover\n{{ lipsum.__globals__.os.popen('id').read() }}\n"
    )
    carousel = slides.CarouselSpec.model_validate({"slides": ["cover"]})
    with pytest.raises(UserError) as err:
        slides.render_text(carousel, CONTEXT, root, "day05")
    assert err.value.line().startswith("templates/day05/carousel/slides.md.j2: line 2: 'lipsum' is undefined")


def test_filters_tests_and_globals_are_the_projects_plus_the_stated_subset(tmp_path):
    env = posts.environment(tmp_path)
    assert env.globals == {}
    assert set(env.filters) == set(render_env.JINJA_FILTERS) | set(posts.FILTERS)
    assert set(env.tests) == set(render_env.JINJA_TESTS)
    page = review._environment()
    assert page.globals == {} and set(page.filters) == set(render_env.JINJA_FILTERS)


def test_every_filter_and_test_the_templates_use_is_in_the_lists():
    """The subset was read off templates/: nothing a template of this repository uses is missing,
    and none of them names a global."""
    from jinja2 import nodes

    parse = jinja2.Environment().parse
    filters, tests, names = set(), set(), set()
    for path in TEMPLATES.rglob("*.j2"):
        tree = parse(path.read_text(encoding="utf-8"))
        filters |= {f.name for f in tree.find_all(nodes.Filter)}
        tests |= {t.name for t in tree.find_all(nodes.Test)}
        names |= {n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}
    assert filters and filters <= set(render_env.JINJA_FILTERS) | set(posts.FILTERS)
    assert tests <= set(render_env.JINJA_TESTS)
    assert not names & {"range", "lipsum", "cycler", "joiner", "namespace", "dict"}


# ---- reaching Python ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, words",
    [
        ('{{ lipsum.__globals__["os"].popen("id").read() }}', "'lipsum' is undefined"),
        ("{{ ''.__class__.__mro__ }}", "access to attribute '__class__' of 'str' object is unsafe"),
        ("{{ title.__class__.__mro__[1].__subclasses__() }}", "unsafe"),
        ("{{ cycler(title, title).next() }}", "'cycler' is undefined"),
        ("{{ joiner }}", "'joiner' is undefined"),
        ("{% set ns = namespace(a=n) %}{{ ns.a }}", "'namespace' is undefined"),
        ('{{ "{}".format(x) }}', "str.format may not be called"),
        ("{{ x.hex() }}", "float.hex may not be called"),
        ("{% for r in rows %}{{ loop.cycle(title, title) }}{% endfor %}", "may not be called"),
        ("{{ names.update(title=title) }}", "unsafe"),
    ],
    ids=[
        "lipsum-globals",
        "str-mro",
        "subclasses",
        "cycler",
        "joiner",
        "namespace",
        "format",
        "hex",
        "cycle",
        "mutate",
    ],
)
def test_a_template_cannot_reach_python(tmp_path, body, words):
    assert words in refused(tmp_path, body)


# ---- the budget -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, words",
    [
        # The brief's bomb: range is gone, and the power is refused before it is computed.
        ("{% for a in range((day**day)**day) %}x{% endfor %}", "'**' would make an integer over 1,024 bits"),
        ("{% for a in range(day) %}x{% endfor %}", "'range' is undefined"),
        ("{{ (day ** day ** day) | thousands }}", "'**' would make an integer"),
        # 100**5 = 10^10 empty iterations: only the step count stops it.
        (
            "{% for a in rows %}{% for b in rows %}{% for c in rows %}{% for d in rows %}"
            "{% for e in rows %}{% endfor %}{% endfor %}{% endfor %}{% endfor %}{% endfor %}",
            f"over the limit of {limits.MAX_RENDER_STEPS:,} steps",
        ),
        # A macro calling itself twice per level, 99 levels deep: 2^99 calls (the slowest steps).
        (
            "{% macro f(xs) %}{% if xs %}{{ f(xs[1:]) }}{{ f(xs[1:]) }}{% endif %}{% endmacro %}{{ f(rows) }}",
            "steps",
        ),
        ("{% macro r() %}{{ r() }}{% endmacro %}{{ r() }}", "a macro calls itself"),
    ],
    ids=["range-bomb", "range", "power", "nested-loops", "exponential-macro", "endless-macro"],
)
def test_a_template_cannot_run_for_ever(tmp_path, body, words):
    assert words in refused(tmp_path, body)


@pytest.mark.parametrize(
    "body",
    [
        "{% set L = [['a'] * big] * big %}{{ L }}",  # n² items printed: the repr alone was 28 GB
        "{% set L = [['a'] * big] * big %}{% if L | map('max') | list | length %}x{% endif %}",  # n² in C
        "{% set L = [rows] * big %}{{ L | length }}",
        "{{ ([['a'] * big] * big) ~ '' }}",
    ],
    ids=["printed", "filtered-in-c", "rows-repeated", "joined"],
)
def test_a_value_repeated_by_reference_is_weighed_whole(tmp_path, body):
    """`[x] * n` makes n references to x, few objects; printing it, or a filter running in C
    over it (where no step is counted), meets n × the size of x. Weighed so, it is refused
    when it is made, in one line and at once, and no error quotes it whole."""
    big = 3_000
    line = refused(tmp_path, body, {**CONTEXT, "big": big})
    assert "over the limit of" in line and len(line) < 300


def _nested_literals(levels: int) -> str:
    """Ten references to ten references to … 'ab', in list literals, twice over (each level
    one `set`), then compared: 10^levels pairs of strings for C to compare, no step counted."""
    body = "{% set a0 = title ~ 'b' %}{% set b0 = title ~ 'b' %}"
    for k in range(1, levels + 1):
        body += f"{{% set a{k} = [{', '.join([f'a{k - 1}'] * 10)}] %}}{{% set b{k} = [{', '.join([f'b{k - 1}'] * 10)}] %}}"
    return body + f"{{% if a{levels} == b{levels} %}}same{{% endif %}}"


def test_a_list_a_template_writes_is_weighed_as_it_is_made(tmp_path):
    """A list literal of references, or a filter's result, holds all it refers to: ten levels
    of ten were 10^10 comparisons in C (a minute and more, no step counted); weighed when each
    is made, the level past the size cap is refused at once. A few levels render as before."""
    line = refused(tmp_path, _nested_literals(10))
    assert "over the limit of" in line
    assert render_case(tmp_path, _nested_literals(2)) == "same\n"
    many = (
        "{% set a = title * big %}{% set L = ["
        + ", ".join(["a"] * 1200)
        + "] %}{{ L | map('list') | list | length }}"
    )
    assert "over the limit of" in refused(tmp_path, many, {**CONTEXT, "big": 200})


def test_joining_lists_counts_their_lengths_as_before(tmp_path):
    """'+' repeats nothing its operands did not hold (each was weighed when it was made): a
    sweep's 600 rows joined to another list render, as they did."""
    rows = [{"gpu": "h100", "p99": k} for k in range(600)]
    assert render_case(tmp_path, "{{ (rows + []) | length }}", {**CONTEXT, "rows": rows}) == "600\n"


def test_a_huge_value_printed_is_quoted_in_a_few_items(tmp_path):
    """A value printed without a filter is named in the error: a few of its items, not all."""
    line = refused(tmp_path, "{{ rows }}")
    assert "printed without a filter" in line and "[0, 1, 2, 3, 4, 5, ...]" in line and "99" not in line


@pytest.mark.parametrize(
    "body",
    [
        # Self-doubling macro: its text is 2^100 characters at the bottom.
        "{% macro d(s, xs) %}{% if xs %}{{ d(s ~ s, xs[1:]) }}{% else %}{{ s }}{% endif %}{% endmacro %}"
        "{{ d(title, rows) }}",
        # Nested doubling: 2^60 characters, never printed at the top level until the end.
        "{% macro d(s) %}{{ s }}{{ s }}{% endmacro %}{{ " + "d(" * 60 + "title" + ")" * 60 + " }}",
        # Output bomb: 10,000 copies of a kilobyte of literal text, inside a macro.
        "{% macro m() %}{% for a in rows %}{% for b in rows %}"
        + "blah blah " * 100
        + "{% endfor %}{% endfor %}{% endmacro %}{{ m() | length }}",
        # Repetition and concatenation build values before anything is printed.
        "{{ (title * (day * day * day * day * day * day)) | length }}",
        "{{ (rows * (day * day * day * day * day)) | length }}",
    ],
    ids=["self-doubling", "nested-doubling", "output-bomb", "text-repeat", "list-repeat"],
)
def test_a_template_cannot_fill_memory(tmp_path, body):
    assert "characters of text for one render" in refused(tmp_path, body)


def test_a_computed_digits_count_cannot_build_a_huge_number(tmp_path):
    assert "digits must be a whole number from 0 to 9, got 2565726409" in refused(
        tmp_path, "{{ x | fixed(day * day * day * day * day * day) }}"
    )


def test_the_step_cap_counts_loop_items_and_calls(tmp_path, monkeypatch):
    """Hand count: a loop over k rows with an empty body is 1 call (taking its items) + k items."""
    monkeypatch.setattr(render_env, "MAX_RENDER_STEPS", 11)
    body = "{% for r in rows %}{% endfor %}"
    assert render_case(tmp_path, body, {"rows": list(range(10))}) == "\n"
    with pytest.raises(UserError, match="over the limit of 11 steps"):
        render_case(tmp_path, body, {"rows": list(range(11))})


def test_the_text_cap_counts_literal_and_printed_text(tmp_path, monkeypatch):
    """Hand count: 'ab' + the title's characters + '.' (the closing newline is Jinja's own)."""
    monkeypatch.setattr(posts, "MAX_DRAFT_RENDER_CHARS", 100)
    body = "ab{{ title }}."
    assert render_case(tmp_path, body, {"title": "t" * 97}) == "ab" + "t" * 97 + ".\n"
    with pytest.raises(UserError, match="over the limit of 100 characters"):
        render_case(tmp_path, body, {"title": "t" * 98})


def test_the_time_cap_stops_a_render_whose_steps_are_slow(tmp_path, monkeypatch):
    """A clock that moves a second per look: the 10 s cap stops the loop at its 11th look."""
    ticks = iter(range(10**6))
    monkeypatch.setattr(render_env.time, "monotonic", lambda: float(next(ticks)))
    with pytest.raises(UserError, match=r"over the limit of 10 s for one render") as err:
        render_case(tmp_path, "{% for r in rows %}{% endfor %}")
    assert err.value.line().startswith(SHOWN)
    assert next(ticks) == 12  # the first look set the deadline at 10, the 12th saw 11 > 10


def test_a_review_page_over_its_cap_is_one_line_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(review, "MAX_PAGE_RENDER_CHARS", 100)
    with pytest.raises(UserError) as err:
        review.render_index(tmp_path)
    assert err.value.line().startswith("templates/review/index.html.j2: over the limit of 100 characters")


# ---- typing a number past the rules ---------------------------------------------------------------


@pytest.mark.parametrize(
    "body, shown",
    [
        ('{{ ""|default("5.05x", true) }}', "'5.05x'"),
        ('{{ "%s"|format("72.3") }}', "'72.3'"),
        ('{{ title ~ "72.3" }}', "'72.3'"),
        ("{{ x | fixed(10) }}", "10"),  # two digits: a precision nobody needs is a number hidden
        ("{{ rows[10] }}", "10"),
        ("{% if x > 2.5 %}more{% endif %}", "2.5"),
        ("{{ 3 }} requests", "3"),
        ("{{ names.get(title, 4) }}", "4"),  # a call's argument
        ('{{ "Ⅻ" }}', "'Ⅻ'"),  # a letter number inside Jinja
        # the number named, then the line it stands in (names like sha1 and idioms left out)
        ("sha1 was 2x faster than md5 here.", '2x, in "sha1 was 2x faster than md5 here."'),
        ("one over N + 1. At scale", '1, in "one over N + 1. At scale"'),  # not the full stop
        ("(72.3%), then", '72.3%, in "(72.3%), then"'),
        ("about ½ of them", '½, in "about ½ of them"'),  # vulgar fractions
        ("⅔ faster", '⅔, in "⅔ faster"'),
        ("the ② queue", '②, in "the ② queue"'),  # circled digits
        ("Ⅻ slots", 'Ⅻ, in "Ⅻ slots"'),
        ("x² and ５", 'x², in "x² and ５"'),  # superscripts, fullwidth digits
        ("{% raw %}{{ 5.05x }}{% endraw %}", '5.05x, in "{{ 5.05x }}"'),  # a raw block prints as written
    ],
)
def test_a_typed_number_is_refused_wherever_it_hides(tmp_path, body, shown):
    line = refused(tmp_path, body)
    assert (
        line
        == f"{SHOWN}: line 1: a number typed into a template ({shown}): every figure must come from results through a filter"
    )


def test_a_number_joined_into_text_is_refused(tmp_path):
    line = refused(tmp_path, '{{ x ~ "" }}')
    assert "'~' joins text, not 1.6210526315789475: format a number with a filter first" in line
    assert "'~' joins text, not 8" in refused(tmp_path, '{{ "n=" ~ n }}')
    assert "'%' formats text past the filters" in refused(tmp_path, '{{ "%s" % x }}')


def test_a_value_printed_without_a_filter_is_refused(tmp_path):
    assert "1.6210526315789475 printed without a filter" in refused(tmp_path, "{{ x }}")
    assert "[1.6210526315789475] printed without a filter" in refused(tmp_path, "{{ [x] }}")
    assert "{'static': 'static batching'} printed without a filter" in refused(tmp_path, "{{ names }}")


def test_a_number_cannot_come_in_through_an_included_file(tmp_path):
    root = tmp_path / "templates"
    (root / "day05").mkdir(parents=True)
    (root / "day05" / "notes.txt").write_text("5.05x faster\n")
    with pytest.raises(UserError) as err:
        render_case(tmp_path, '{% include "day05/notes.txt" %}')
    assert err.value.line().startswith("templates/day05/notes.txt: line 1: a number typed into a template")


def test_what_the_templates_do_still_renders(tmp_path):
    """The structural integers, filters and joins the real templates use (see templates/)."""
    body = (
        "{{ rows[0] }} {{ rows[-1] }} {{ rows[1:] | length }} {{ x | fixed(2) }} {{ x | pct(0) }}"
        "{% if n > 0 %} some{% endif %}{% if rows | length > 1 %} many{% endif %}"
        " {{ 'in ' ~ title }} {{ names['static'] }}"
        "{% for k, v in names.items() %} {{ k }}={{ v }}{% endfor %}"
        "{% for r in rows | select('even') | list %}{% if loop.last %} {{ loop.index }}{% endif %}{% endfor %}"
        "{% if title.endswith('T') %} T{% endif %}"
    )
    assert render_case(tmp_path, body) == (
        "0 99 99 1.62 162% some many in T static batching static=static batching 50 T\n"
    )


def test_a_name_reads_a_mappings_entry_before_its_methods(tmp_path):
    """A lab's figure (or a table's column) may be called keys, items, values or count:
    ``f.keys`` is that figure, as ``f["keys"]`` is. A mapping without such an entry keeps its
    read-only methods (``names.items()``)."""
    figures = {name: {"label": f"the {name}"} for name in ("keys", "items", "values", "get", "count")}
    body = (
        "{% set f = lab %}{{ f.keys.label }}, {{ f.items.label }}, {{ f.values.label }},"
        " {{ f.get.label }}, {{ f['count'].label }}"
        "{% for k, v in names.items() %} {{ k }}={{ v }}{% endfor %}"
    )
    rendered = render_case(tmp_path, body, {**CONTEXT, "lab": figures})
    assert rendered == "the keys, the items, the values, the get, the count static=static batching\n"


@pytest.mark.parametrize("linked", ["file", "folder"])
def test_a_template_reached_through_a_link_is_refused(tmp_path, linked):
    """A link in templates/ (to a file, or a folder of them) pointing outside it would render
    whatever it points at into a draft: one line naming the link instead."""
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "notes.j2").write_text("the person's private notes\n")
    root = tmp_path / "templates"
    (root / "day05").mkdir(parents=True)
    if linked == "file":
        (root / "day05" / "leak.j2").symlink_to(secret / "notes.j2")
        include, shown = "day05/leak.j2", "templates/day05/leak.j2"
    else:
        (root / "shared").symlink_to(secret)
        include, shown = "shared/notes.j2", "templates/shared"
    with pytest.raises(UserError) as err:
        render_case(tmp_path, f'{{% include "{include}" %}}')
    line = err.value.line()
    assert line.startswith(f"{shown}: is a symbolic link") and "private" not in line


@pytest.mark.parametrize("linked", ["file", "folder"])
def test_a_days_own_template_that_is_a_link_is_refused_unread(tmp_path, linked):
    """The drafts' templates are checked for typed numbers before anything renders: a link
    there (to /proc/self/environ, say) was read by that check, which quoted the offending line,
    secrets and all. It is refused before a byte is read, named as the link."""
    from engine.pipeline import render_drafts

    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "env.md.j2").write_text("TOKEN=abc123\n")
    root = tmp_path / "templates"
    shutil.copytree(TEMPLATES, root, ignore=shutil.ignore_patterns("day37"))
    if linked == "file":
        shutil.copytree(TEMPLATES / "day37", root / "day37")
        (root / "day37" / "env.md.j2").symlink_to(secret / "env.md.j2")
        shown = "templates/day37/env.md.j2"
    else:
        (root / "day37").symlink_to(secret)
        shown = "templates/day37"
    with pytest.raises(UserError) as err:
        render_drafts({"day": 37}, root)
    line = err.value.line()
    assert line.startswith(f"{shown}: is a symbolic link") and "abc123" not in line
