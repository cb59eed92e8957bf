"""Rendering drafts: the Jinja environment and the filters that format numbers.

Templates see results and spec metadata only; every number on a post reaches it through a
filter here, and every filter that prints a number is engine.numbers', so a figure is written
the same on a post as on its chart, its alt text and the review page.
StrictUndefined turns a misspelt variable into an error instead of an empty gap in a post.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2

from engine import numbers, template_cache
from engine.errors import UserError
from engine.limits import MAX_TEMPLATE_BYTES, read_text_limited
from engine.numbers import bytesize, duration, fixed, gib, ms, multiple, pct, ratio, thousands


def figure(fig: dict[str, Any], as_unit: str | None = None) -> str:
    """A lab figure as a post writes it: '92 ns', '8.2 MB', '3.4x', '4' (a count); with a unit
    of the same dimension, in that unit: ``f.disk | figure("us")`` → '1,217 µs'."""
    return numbers.figure_text(fig, as_unit)


def hashtag(word: str) -> str:
    """'SystemDesign' → '#SystemDesign' (CamelCase reads better with screen readers)."""
    return "#" + word.lstrip("#")


def _strict(fn: Callable[..., str]) -> Callable[..., str]:
    """A filter that refuses an undefined value with Jinja's own error, instead of formatting it
    into a TypeError (StrictUndefined only fails on use, and format() is not a use it knows)."""

    @functools.wraps(fn)
    def wrapper(value: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(value, jinja2.Undefined):
            value._fail_with_undefined_error()
        return fn(value, *args, **kwargs)

    return wrapper


_FORMATS: dict[str, Callable[..., str]] = {
    "thousands": thousands,
    "pct": pct,
    "multiple": multiple,
    "gib": gib,
    "fixed": fixed,
    "ms": ms,
    "hashtag": hashtag,
    "duration": duration,
    "bytesize": bytesize,
    "ratio": ratio,
    "figure": figure,
}
FILTERS = {name: _strict(fn) for name, fn in _FORMATS.items()}

# The rule that keeps numbers out of templates: once Jinja's own constructs are removed, no
# digit may remain. Checked by every build (and by the tests), so a typed number cannot ship.
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)


def digits_outside_jinja(source: str) -> list[tuple[int, str]]:
    """(line number, line) for each template line that holds a digit outside Jinja."""
    bare = _JINJA.sub(lambda m: "\n" * m.group(0).count("\n"), source)
    return [(n, line) for n, line in enumerate(bare.splitlines(), 1) if re.search(r"\d", line)]


def numbers_inside_jinja(source: str) -> list[tuple[int, str]]:
    """(line number, constant) for each number written as a constant inside a Jinja construct.

    ``{{ "14.3%" }}`` or ``{% set m = 5.05 %}`` would smuggle a figure past the text rule.
    Allowed: a filter's arguments (``gib(0)``, ``fixed(1)``: formatting, not figures), a
    subscript (``rows[0]``, ``rows[-1]``: which row, not what it says), a comparison's operands
    (``{% if waits > 0 %}``: what to say, never printed) and template file names.
    """
    from jinja2 import nodes

    tree = jinja2.Environment().parse(source)
    allowed: set[int] = set()
    for imported in tree.find_all((nodes.Import, nodes.FromImport, nodes.Include, nodes.Extends)):
        allowed.add(id(imported.template))  # type: ignore[attr-defined]  # a file name: "_macros.j2"
    for compare in tree.find_all(nodes.Compare):  # `x > 0` decides what to say, prints nothing
        allowed |= {id(c) for c in compare.find_all(nodes.Const)}
    for node in tree.find_all((nodes.Filter, nodes.Getitem)):
        parts = node.args if isinstance(node, nodes.Filter) else [node.arg]  # type: ignore[attr-defined]
        for part in parts:
            allowed |= {id(c) for c in part.find_all(nodes.Const)} | {id(part)}
    found = []
    for const in tree.find_all(nodes.Const):
        value = const.value
        if id(const) in allowed or isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)) or (isinstance(value, str) and re.search(r"\d", value)):
            found.append((const.lineno, repr(value)))
    return found


@functools.lru_cache(maxsize=64)
def _typed_numbers(source: str) -> tuple[tuple[int, str], ...]:
    """Both rules' findings for one template text. Kept by text: every build checks every
    template it renders, and parsing one is most of what a draft costs once its compiled code
    is kept (engine.template_cache); a text that does not parse raises, and nothing is kept."""
    return tuple(digits_outside_jinja(source) + numbers_inside_jinja(source))


def check_no_typed_numbers(templates_root: Path, names: list[str]) -> None:
    """Refuse a template with a figure typed into it, as text or as a Jinja constant."""
    for name in names:
        try:
            source = read_text_limited(templates_root / name, MAX_TEMPLATE_BYTES, "template")
        except UserError as err:
            raise UserError(err.message, file=f"templates/{name}") from None
        try:
            found = _typed_numbers(source)
        except jinja2.TemplateSyntaxError as exc:
            raise _syntax_error(exc, name) from None
        if found:
            number, text = min(found)
            raise UserError(
                f"a number typed into a template ({text.strip()}): every figure must come "
                "from results through a filter",
                file=f"templates/{name}",
                field=f"line {number}",
            )


class UnformattedNumber(Exception):
    """A template printed a number without a filter."""


def _finalize(value: Any) -> Any:
    """Every printed fraction, and every whole number from 1,000 up, must come through a filter:
    `{{ batching.multiple }}` would otherwise put 5.049651567944251 on a post, 13280 without its comma."""
    if isinstance(value, float) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 1000
    ):
        raise UnformattedNumber(value)
    return value


class _LimitedLoader(jinja2.FileSystemLoader):
    """Jinja's file loader, reading through engine.limits: a template that is not UTF-8, too
    big, or not a regular file (a folder named ``*.j2``) is one line naming it."""

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        shown = f"templates/{template}"
        try:
            _, filename, uptodate = super().get_source(environment, template)
        except jinja2.TemplateNotFound:
            if any((Path(root) / template).is_dir() for root in self.searchpath):
                raise UserError("is a folder, not a template file", file=shown) from None
            raise
        try:
            source = read_text_limited(filename, MAX_TEMPLATE_BYTES, "template")
        except UserError as err:
            raise UserError(err.message, file=shown) from None
        return source, filename, uptodate


def environment(templates_root: Path) -> jinja2.Environment:
    """One environment for every day: day folders plus shared macros at the root."""
    env = jinja2.Environment(
        loader=_LimitedLoader(str(templates_root)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        finalize=_finalize,
        bytecode_cache=template_cache.DRAFTS,
    )
    env.filters.update(FILTERS)
    return env


def number_thread(text: str) -> str:
    """Prefix each post of a thread with 'k/n'; posts are separated by a line '---'.

    Numbering is done here, after rendering, so that adding or removing a post in a template
    can never leave a thread numbered wrongly. Posts are split by the same rule the platform
    check reads them with (engine.platforms.split_thread), so the two can never disagree.
    """
    from engine.platforms import split_thread

    posts = [post for post in split_thread(text) if post.strip()]
    total = len(posts)
    numbered = [f"{k}/{total} {post}" for k, post in enumerate(posts, start=1)]
    return "\n---\n".join(numbered) + "\n"


def _syntax_error(exc: jinja2.TemplateSyntaxError, template: str) -> UserError:
    return UserError(
        exc.message or "syntax error",
        file=f"templates/{exc.name or template}",
        field=f"line {exc.lineno}",
    )


def _template_line(exc: Exception, template: str) -> str | None:
    """The template line a rendering error came from, read off the traceback Jinja rewrites."""
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith(template):
            line = tb.tb_lineno
        tb = tb.tb_next
    return f"line {line}" if line else None


def render(env: jinja2.Environment, template: str, context: dict[str, Any]) -> str:
    """Render one draft; trailing spaces and runs of blank lines are tidied away."""
    try:
        text = env.get_template(template).render(**context)
    except jinja2.TemplateSyntaxError as exc:  # also unknown filters and tests
        raise _syntax_error(exc, template) from None
    except jinja2.TemplateNotFound as exc:
        raise UserError(
            f"includes or imports {exc.name!r}, which does not exist",
            file=f"templates/{template}",
            field=_template_line(exc, template),
        ) from None
    except RecursionError:
        raise UserError(
            "includes itself (directly or through another template) without end", file=f"templates/{template}"
        ) from None
    except UnformattedNumber as exc:
        raise UserError(
            f"{exc.args[0]!r} printed without a filter: format it with {', '.join(sorted(FILTERS))}",
            file=f"templates/{template}",
            field=_template_line(exc, template),
        ) from None
    except jinja2.UndefinedError as exc:
        # A template asking for a figure the spec did not compute (a section or policy left
        # out) is a user-level mismatch, not a crash: name the template and the missing name.
        line = _template_line(exc, template)
        raise UserError(
            f"{exc.message}: does the spec have the section this template needs?",
            file=f"templates/{template}",
            field=line,
        ) from None
    except (TypeError, ValueError, ArithmeticError, AttributeError, jinja2.TemplateError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(
            f"the template failed while rendering ({type(exc).__name__}: {detail})",
            file=f"templates/{template}",
            field=_template_line(exc, template),
        ) from None
    lines = [line.rstrip() for line in text.splitlines()]
    tidy: list[str] = []
    for line in lines:
        if line == "" and (not tidy or tidy[-1] == ""):
            continue
        tidy.append(line)
    while tidy and tidy[-1] == "":
        tidy.pop()
    return "\n".join(tidy) + "\n"
