"""Rendering drafts: the Jinja environment and the filters that format numbers.

Templates see results and spec metadata only; every number on a post reaches it through a
filter here, and every filter that prints a number is engine.numbers', so a figure is written
the same on a post as on its chart, its alt text and the review page.
StrictUndefined turns a misspelt variable into an error instead of an empty gap in a post.
The environment is engine.render.render_env's sandbox: a draft someone else wrote is safe to build.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import nodes
from jinja2.loaders import split_template_path

from engine import numbers
from engine.errors import UserError
from engine.limits import MAX_DRAFT_RENDER_CHARS, MAX_TEMPLATE_BYTES, present, read_text_limited
from engine.numbers import bytesize, duration, fixed, gib, ms, multiple, pct, ratio, thousands
from engine.platforms.reflow import reflow
from engine.platforms.thread import label, split_thread
from engine.render import template_cache
from engine.render.render_env import RenderCapExceeded, Sandbox, quoted

if TYPE_CHECKING:
    from engine.platforms.reflow import PostLimits


def figure(fig: dict[str, Any], as_unit: str | None = None) -> str:
    """A lab figure as a post writes it: '92 ns', '8.2 MB', '3.4x', '4' (a count); with a unit
    of the same dimension, in that unit: ``f.disk | figure("us")`` → '1,217 µs'."""
    return numbers.figure_text(fig, as_unit)


def hashtag(word: str) -> str:
    """'SystemDesign' → '#SystemDesign' (CamelCase reads better with screen readers)."""
    return "#" + word.lstrip("#")


def _strict(fn: Callable[..., str]) -> Callable[..., str]:
    """A filter that refuses an undefined value with Jinja's own error, instead of formatting it
    into a TypeError (StrictUndefined only fails on use, and format() is not a use it knows),
    and refuses a ``digits`` outside 0 to MAX_STRUCTURAL_INT: more decimals are noise, and a
    computed ``fixed(day ** day)`` would build a string larger than memory before any cap."""
    names = list(inspect.signature(fn).parameters)
    digits_at = names.index("digits") - 1 if "digits" in names else None

    @functools.wraps(fn)
    def wrapper(value: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(value, jinja2.Undefined):
            value._fail_with_undefined_error()
        if digits_at is not None:
            digits = args[digits_at] if len(args) > digits_at else kwargs.get("digits")
            if digits is not None and (type(digits) is not int or not 0 <= digits <= MAX_STRUCTURAL_INT):
                raise ValueError(
                    f"{fn.__name__}: digits must be a whole number from 0 to {MAX_STRUCTURAL_INT}, "
                    f"got {digits!r}"
                )
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
# number character (has_number) may remain. Checked by every build and every file the drafts
# load (and by the tests), so a typed number cannot ship.
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
# A raw block prints its inside as written, Jinja-looking text included: checked as text.
_RAW = re.compile(r"\{%[-+]?\s*raw\s*[-+]?%\}(.*?)\{%[-+]?\s*endraw\s*[-+]?%\}", re.S)
# Unicode's number characters: digits of every script (Nd: 5, ５, ٥), other numbers (No: ½, ²,
# ②) and letter numbers (Nl: Ⅻ). Each writes a number as surely as an ASCII digit does.
_NUMBER_CATEGORIES = frozenset({"Nd", "No", "Nl"})
# The integers a template may write: single digits, each for structure, never a figure: which
# row (`rows[0]`, `rows[-1]`, `rows[1:]`), how many decimals (`fixed(2)`), and zero / one /
# many (`{% if waits > 0 %}`, `scale != 1`, `gpus | length > 1`).
MAX_STRUCTURAL_INT = 9


def has_number(text: str) -> bool:
    """Whether text holds a number character: an ASCII digit or any of _NUMBER_CATEGORIES."""
    if text.isascii():
        return any("0" <= ch <= "9" for ch in text)
    return any(unicodedata.category(ch) in _NUMBER_CATEGORIES for ch in text)


def _outside_jinja(source: str) -> str:
    """The template's literal text: Jinja constructs blanked (their line breaks kept), raw
    blocks' insides kept as they are."""

    def blank(text: str) -> str:
        return _JINJA.sub(lambda m: "\n" * m.group(0).count("\n"), text)

    pieces, start = [], 0
    for raw in _RAW.finditer(source):
        pieces += [blank(source[start : raw.start()]), raw.group(1)]
        start = raw.end()
    pieces.append(blank(source[start:]))
    return "".join(pieces)


# What a template's words may say with a digit, because none of it is a figure: a time of day
# ("2 am", "11:30 pm"), "24/7", a day of the series ("Day 4", "day 37"), and a name whose digits
# follow letters ("p99", "IPv6", "H200", "L1", "S3"; not "x2", a multiple). A number standing on its own ("5x",
# "72.3%", "200 ms", "3", "2.0") is a typed figure and refused. Removed before the text is read.
IDIOMS = re.compile(
    r"\b(?:1[0-2]|0?[1-9])(?::[0-5]\d)?\s?(?:am|pm|a\.m\.|p\.m\.)(?![A-Za-z])"
    r"|(?<![\w.,/])24/7(?![\w/])"
    r"|\b[Dd]ay \d{1,3}\b(?![.,]\d)"
    r"|(?<![\w.,])(?![xX]\d)[A-Za-z]+\d[A-Za-z0-9]*\b(?![.,]\d)"
)


def digits_outside_jinja(source: str) -> list[tuple[int, str]]:
    """(line number, line) for each template line that holds a number character outside Jinja,
    once its idioms (IDIOMS) are set aside."""
    bare = _outside_jinja(source)
    return [(n, line) for n, line in enumerate(bare.splitlines(), 1) if has_number(IDIOMS.sub("", line))]


def numbers_inside_jinja(source: str) -> list[tuple[int, str]]:
    """(line number, constant) for each number written as a constant inside a Jinja construct.

    ``{{ "14.3%" }}``, ``{% set m = 5.05 %}``, ``""|default("5.05x", true)`` or
    ``"%s"|format("72.3")`` would smuggle a figure past the text rule. Refused: every number
    constant and every text constant holding a number character, wherever it stands (a filter's
    or a call's argument included). Allowed: template file names (``"_macros.j2"``), and an
    integer from 0 to MAX_STRUCTURAL_INT (signed) in three places that decide structure and
    print nothing typed: the arguments of this module's formatting filters (``fixed(1)``), a
    subscript or slice (``rows[-1]``) and a comparison's operands (``{% if waits > 0 %}``).
    """
    tree = jinja2.Environment().parse(source)
    allowed: set[int] = set()
    for imported in tree.find_all((nodes.Import, nodes.FromImport, nodes.Include, nodes.Extends)):
        name = imported.template  # type: ignore[attr-defined]  # a file name: "_macros.j2"
        allowed |= {id(c) for c in name.find_all(nodes.Const)} | {id(name)}
    structural: list[nodes.Node | None] = []
    for filtered in tree.find_all(nodes.Filter):
        if filtered.name in FILTERS:
            structural += filtered.args + [kw.value for kw in filtered.kwargs]
    for item in tree.find_all(nodes.Getitem):
        arg = item.arg
        structural += [arg.start, arg.stop, arg.step] if isinstance(arg, nodes.Slice) else [arg]
    for compare in tree.find_all(nodes.Compare):
        structural += [compare.expr] + [op.expr for op in compare.ops]
    for node in structural:
        if isinstance(node, (nodes.Neg, nodes.Pos)):
            node = node.node
        if (
            isinstance(node, nodes.Const)
            and type(node.value) is int
            and 0 <= node.value <= MAX_STRUCTURAL_INT
        ):
            allowed.add(id(node))
    found = []
    for const in tree.find_all(nodes.Const):
        value = const.value
        if id(const) in allowed or isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float, complex)) or (isinstance(value, str) and has_number(value)):
            found.append((const.lineno, repr(value)))
    return found


@functools.lru_cache(maxsize=64)
def _typed_numbers(source: str) -> tuple[tuple[int, str], ...]:
    """Both rules' findings for one template text. Kept by text: every build checks every
    template it renders, and parsing one is most of what a draft costs once its compiled code
    is kept (engine.render.template_cache); a text that does not parse raises, and nothing is kept."""
    return tuple(digits_outside_jinja(source) + numbers_inside_jinja(source))


def check_no_typed_numbers(templates_root: Path, names: list[str]) -> None:
    """Refuse a template with a figure typed into it, as text or as a Jinja constant."""
    for name in names:
        _refuse_typed_numbers(read_template(templates_root, name), name)


def read_template(root: Path, name: str) -> str:
    """Template ``name`` (``day37/linkedin.md.j2``) of the folder ``root``, read only if it is a
    file of that folder itself: a symbolic link on the way (the file, or a folder below the
    root) would have a day someone else wrote render, or quote in an error, a file from anywhere
    (/proc/self/environ, the person's notes). Checked before a byte is read; bounded."""
    shown = f"templates/{name}"
    where, passed = Path(root), "templates"
    for part in name.split("/"):
        if part in ("", ".", ".."):
            raise jinja2.TemplateNotFound(name)
        where, passed = where / part, f"{passed}/{part}"
        if where.is_symlink():  # named as the link itself: the file, or the folder it is in
            raise UserError("is a symbolic link; a template must be a file in templates/ itself", file=passed)
    try:
        return read_text_limited(where, MAX_TEMPLATE_BYTES, "template", follow_symlinks=False)
    except UserError as err:
        raise UserError(err.message, file=shown) from None


_AROUND = "\"'()[]{}.,;:!?…"  # what stands around a number in a sentence, not part of it


def _refuse_typed_numbers(source: str, name: str) -> None:
    try:
        found = _typed_numbers(source)
    except jinja2.TemplateSyntaxError as exc:
        raise _syntax_error(exc, name) from None
    if found:
        number, text = min(found)
        line = text.strip()
        # the number itself first, then the line it stands in, to find it by
        token = next((word for word in IDIOMS.sub("", line).split() if has_number(word)), line)
        if token != line and has_number(token.strip(_AROUND)):
            token = token.strip(_AROUND)  # 'N + 1.' names 1, not '1.'
        quoted = line if len(line) <= 60 else line[:57] + "…"  # to find it, not to print a file
        shown = quoted if token == line else f'{token[:20]}, in "{quoted}"'
        raise UserError(
            f"a number typed into a template ({shown}): every figure must come from results through a filter",
            file=f"templates/{name}",
            field=f"line {number}",
        )


class UnformattedNumber(Exception):
    """A template printed a number (or a value holding numbers) without a filter."""


def _finalize(value: Any) -> Any:
    """What a draft may print as it is: text, yes/no, nothing, and a whole number under 1,000.
    Every fraction, every whole number from 1,000 up, and any other value (a list, a mapping,
    whose text would hold its numbers raw) must come through a filter: `{{ batching.multiple }}`
    would otherwise put 5.049651567944251 on a post, 13280 without its comma."""
    if isinstance(value, (str, bool, jinja2.Undefined)) or value is None:
        return value
    if isinstance(value, int) and abs(value) < 1000:
        return value
    raise UnformattedNumber(value)


class _LimitedLoader(jinja2.BaseLoader):
    """The templates folder, read through read_template: a template that is a link or passes
    through one, is not UTF-8, is too big, or is a folder named ``*.j2`` is one line naming it.
    Every file it loads passes the no-typed-numbers rule, so a number cannot come in through an
    include."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        pieces = split_template_path(template)  # Jinja's own rule: no "..", no absolute path
        name = "/".join(pieces)
        path = self.root.joinpath(*pieces)
        if path.is_dir() and not path.is_symlink():
            raise UserError("is a folder, not a template file", file=f"templates/{name}")
        if not present(path):
            raise jinja2.TemplateNotFound(template)
        source = read_template(self.root, name)
        _refuse_typed_numbers(source, name)  # an imported or included file too
        mtime = path.stat().st_mtime
        return source, str(path), lambda: path.is_file() and path.stat().st_mtime == mtime


class _Undefined(jinja2.StrictUndefined):
    """StrictUndefined whose message tells a misspelt name ('best_lfu_gan': it names the nearest
    keys the mapping has) from a section the spec left out (a name not there at all, or one
    asked of the None results hold for a section)."""

    __slots__ = ()

    @property
    def _undefined_message(self) -> str:
        message: str = super()._undefined_message
        obj, name = self._undefined_obj, self._undefined_name
        if obj is jinja2.utils.missing or obj is None:
            return message + ": does the spec have the section this template needs?"
        if isinstance(obj, Mapping) and isinstance(name, str) and len(obj) <= MAX_SUGGESTED_FROM:
            near = difflib.get_close_matches(name, [k for k in obj if isinstance(k, str)], n=3)
            if near:
                message += f" (it has {', '.join(repr(k) for k in near)})"
        return message


MAX_SUGGESTED_FROM = 1000  # keys a misspelt name is matched against; a bigger mapping is not searched


def environment(templates_root: Path) -> jinja2.Environment:
    """One environment for every day: day folders plus shared macros at the root, sandboxed
    (engine.render.render_env) with this module's filters and its rule for printed values."""
    return Sandbox(
        max_chars=MAX_DRAFT_RENDER_CHARS,
        filters=FILTERS,
        printed=_finalize,
        loader=_LimitedLoader(templates_root),
        undefined=_Undefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        bytecode_cache=template_cache.DRAFTS,
    )


def number_thread(text: str, limits: PostLimits | None = None) -> str:
    """Prefix each post of a thread with 'k/n' (a thread of one post is left as it is); posts
    are separated by a line '---'.

    Numbering is done here, after rendering, so that adding or removing a post in a template
    can never leave a thread numbered wrongly. Posts are split by the same rule the platform
    check reads them with (engine.platforms.split_thread), so the two can never disagree. With
    the platform's ``limits``, a post too long for it is first cut into posts that fit, label
    included (engine.platforms.reflow), so a template may be plain paragraphs.
    """
    if limits is None:
        posts = [post for post in split_thread(text) if post.strip()]
    else:
        posts = reflow(text, limits)
    total = len(posts)
    numbered = [label(k, total) + post for k, post in enumerate(posts, start=1)]
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
            "includes itself (directly or through another template), or a macro calls itself, without end",
            file=f"templates/{template}",
        ) from None
    except RenderCapExceeded as exc:
        raise UserError(str(exc), file=f"templates/{template}", field=_template_line(exc, template)) from None
    except UnformattedNumber as exc:
        shown = quoted(exc.args[0])
        shown = shown if len(shown) <= 60 else shown[:60] + "…"
        raise UserError(
            f"{shown} printed without a filter: format it with {', '.join(sorted(FILTERS))}",
            file=f"templates/{template}",
            field=_template_line(exc, template),
        ) from None
    except jinja2.UndefinedError as exc:
        # A template asking for a figure the spec did not compute (a section or policy left
        # out) is a user-level mismatch, not a crash: name the template and the missing name.
        raise UserError(
            str(exc.message), file=f"templates/{template}", field=_template_line(exc, template)
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
