"""Trust every number after editing: each number in an edited draft, traced to where it came from.

A draft leaves the build with every figure from results.json, and then a person edits it. A
figure they type ("74.1%" where the results say 72.3%) or one they keep from an older render
after the results moved would go out looking as real as the rest, so every build and every
``check`` reads the drafts again and traces each number written in them to one of:

- the fresh render: the template printed that very number at that spot (the words around it
  line up with the render's, as a word diff aligns them);
- results.json: the number is what one of its values prints as through engine.numbers, the one
  formatting module, in any of the ways the template filters can write it; or a name the results
  hold that has digits in it ("Llama-2-7B on an H100 80GB");
- the spec's metadata: the day and the series ("Day 37 of 60 days …"); and an earlier day of
  the series named as one ("as on Day 15"): a reference back, as a template may write it, not a
  figure (a later day, not written yet, is read: "Day 38" in Day 37's post is a slip).

Not numbers at all, and not read: digits inside a URL, a hashtag, a Markdown link's target, a
thread's "k/n" labels, and the template's idioms (engine.render.posts.IDIOMS: "p99", "H200",
"24/7", "2 am"), but for a day of the series: "Day 37" is read, and traces to the spec's day. A person accepts a number they typed on purpose by writing it as
``{=74.1%}``: the audit passes it, and the copy buttons, the platform checks and the review page
all read it as plain ``74.1%`` (strip_accepted).

What is left is a finding: "typed by hand", or "stale" when the render the person saw before
held that number at that spot and the fresh render holds another ("the results now say 72.3%").
Everything here is a pure function of texts and results but read_record and folder_findings,
which read a day's folder (its drafts, alt texts, results.json and the build's record).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import numbers, units
from engine.errors import UserError
from engine.limits import (
    MAX_DRAFT_BYTES,
    MAX_RESULTS_BYTES,
    load_json,
    read_json_object,
    read_text_limited,
)
from engine.outdir.manifest import AUDIT, read_base
from engine.outdir.opcodes import opcodes
from engine.platforms.registry import platforms
from engine.platforms.thread import label_spans
from engine.render.posts import IDIOMS

# An accepted number: ``{=74.1%}``. Braces and an equals sign survive Markdown untouched, are on
# every keyboard, and never occur in a draft the engine renders.
ACCEPTED = re.compile(r"\{=([^{}\n]*)\}")

# The units a formatting filter writes after a number, longest first so "GiB/s" wins over "GiB";
# "×", "μs" and "us" are how a person may type "x" and "µs". k, K and M are abbreviations no
# filter writes: a number with one is typed by hand unless the template printed it there.
_FORMATTED_UNITS = ("%", "x", "×", "ns", "µs", "μs", "us", "ms", "s", "ops/s") + tuple(
    u.name for u in units.UNITS.values() if u.dimension in ("bytes", "rate")
)
_ABBREVIATIONS = ("k", "K", "M")
_UNIT_ALTERNATION = "|".join(
    re.escape(u) for u in sorted(_FORMATTED_UNITS + _ABBREVIATIONS, key=len, reverse=True)
)
# A number as written: thousands separated or not, a decimal, a sign standing before it, and a
# unit after it (a space between is optional). Not a number: digits that continue a word, a
# decimal, a path or a hyphenated name ("Llama-2-7B"), that run on into letters ("3rd"), or a
# time of day, the hour as well as its minutes: one a clock word follows ("17:48 UTC", "9:05
# am") or a date comes before ("2026-12-03 17:48"); a bare "1:30" may be a duration, and is read.
_NUMBER = re.compile(
    r"(?<![\w.,/#:])(?<!\w-)(?<!\d{4}-\d\d-\d\d[ T])"
    r"(?!\d{1,2}:\d\d(?::\d\d)?\s?(?:UTC|GMT|[AaPp]\.?[Mm]\.?)(?!\w))"
    r"(?P<num>[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"
    r"(?:[ \u00a0\u202f]?(?P<unit>" + _UNIT_ALTERNATION + r")(?![\w/])|(?!\.\d)(?!\w))"
)
# A bare link ("github.com/…"): DNS's own bounds (labels of at most 63 characters, and here at
# most 20 of them) keep each try short, so a run like "1.1.1.…" is read in linear time (unbounded,
# each of its n starts scanned the rest of the run: a 64 KB draft took half a minute).
_URL = re.compile(r"(?:https?://|www\.)\S+|\b(?:[\w-]{1,63}\.){1,20}[A-Za-z]{2,63}/\S*")
_HASHTAG = re.compile(r"(?<![\w&])#\w+")
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
_WORD = re.compile(r"\S+")
_DAY = re.compile(r"[Dd]ay \d+")
_DAY_BEFORE = re.compile(r"(?<!\w)[Dd]ay ")  # matched in the four characters before a number
# How a person may write what a filter writes: a space before the unit, × for x, μ for µ, us.
_SPELLINGS = str.maketrans({"×": "x", "μ": "µ", "−": "-", "\u00a0": " ", "\u202f": " "})

# Not figures a post quotes: the platform counts of the drafts, chart and page sizes.
IGNORED = frozenset({"checks", "charts", "carousel"})
MAX_ROWS = 50  # a longer list is a series behind a chart (a timeline, a CDF), not a figure to quote
DIGITS = range(4)  # the decimals a template asks of fixed, pct, multiple, gib and ms in practice
ALT_SUFFIX = ".alt.txt"  # a chart's alt text, posted with it: audited like a draft
MAX_RATIO_FIGURES = 40  # figures ({value, unit}) whose pairs' ratios are indexed, as a lab has
CONTEXT_WORDS = 6  # the words a finding quotes either side of its number: enough to find it
WINDOW = 300  # characters either side of a number the words are looked for in
MAX_NAME = 200  # a longer text in the results is a sentence, not a name a draft repeats
# A draft is a few kB (a post is at most 3,000 characters); a word alignment of one far larger
# would take minutes, so such a draft is traced against its results alone.
MAX_ALIGN_CHARS = 60_000


@dataclass(frozen=True)
class Number:
    """One number written in a draft: where it stands, as written, and as the index spells it."""

    start: int
    end: int
    text: str
    key: str  # the number and its unit, spelt the way engine.numbers writes them, no space
    bare: str  # the number alone
    unit: str


@dataclass(frozen=True)
class Finding:
    """A number in an edited draft that traces to nothing."""

    draft: str
    line: int  # 1-based
    column: int  # 0-based, in the line as it reads with the accepted markers stripped
    text: str
    line_text: str
    now: str | None = None  # stale: the number the fresh render writes at that spot, if any
    stale: bool = False

    @property
    def end(self) -> int:
        return self.column + len(self.text)

    @property
    def words(self) -> str:
        """The words around the number on its line: enough to find it, not the whole paragraph
        (read from a window of WINDOW characters either side, so a finding on a line of a
        hundred thousand costs what one on a short line does)."""
        start = max(0, self.column - WINDOW)
        before, after = self.line_text[start : self.column], self.line_text[self.end : self.end + WINDOW]
        if start:
            before = before[before.find(" ") + 1 :] if " " in before else before
        head = [m.start() for m in _WORD.finditer(before)]
        tail = [m.end() for m in _WORD.finditer(after)]
        if len(head) > CONTEXT_WORDS:
            before = "… " + before[head[-CONTEXT_WORDS] :]
        if len(tail) > CONTEXT_WORDS:
            after = after[: tail[CONTEXT_WORDS - 1]] + " …"
        return f"{before}{self.text}{after}".strip()

    @property
    def why(self) -> str:
        if self.stale and self.now is not None:
            return f"stale: the results now say {self.now}"
        if self.stale:
            return "stale: an earlier render said it; the results no longer do"
        return f"typed by hand: no result prints as {self.text}"

    def __str__(self) -> str:
        return (
            f'{self.draft} line {self.line}: {self.text} {self.why} ("{self.words}"); '
            f"if it is right, write it as {{={self.text}}}"
        )


# ---- accepted numbers ---------------------------------------------------------------------------


def strip_accepted(text: str) -> str:
    """The draft as it is posted: every ``{=74.1%}`` written as ``74.1%``."""
    return ACCEPTED.sub(lambda m: m.group(1), text)


def _accepted(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The stripped text and where each accepted number stands in it."""
    spans, pieces, at, shift = [], [], 0, 0
    for match in ACCEPTED.finditer(text):
        pieces += [text[at : match.start()], match.group(1)]
        start = match.start() - shift
        spans.append((start, start + len(match.group(1))))
        shift += len(match.group(0)) - len(match.group(1))
        at = match.end()
    pieces.append(text[at:])
    return "".join(pieces), spans


# ---- reading numbers ----------------------------------------------------------------------------


def spelling(text: str) -> str:
    """A number as the index holds it: '7.32ms', '5.0x', '1.0µs' for '7.32 ms', '5.0×', '1.0 us'."""
    key = text.translate(_SPELLINGS).replace(" ", "")
    return re.sub(r"(?<=\d)us$", "µs", key)


def numbers_in(text: str, *, thread: bool = False) -> list[Number]:
    """Every number written in ``text`` that could be a figure, in order (see the module's
    docstring for what is not read)."""
    spans = [m.span() for pattern in (_URL, _HASHTAG, _LINK_TARGET) for m in pattern.finditer(text)]
    # A day of the series is read: "Day 37" traces to the day, "Day 4" to the day it links back to.
    spans += [m.span() for m in IDIOMS.finditer(text) if not _DAY.fullmatch(m.group(0))]
    skipped = _Spans(spans + (label_spans(text) if thread else []))
    found = []
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        if skipped.overlaps(start, end):
            continue
        unit = match.group("unit") or ""
        found.append(
            Number(start, end, match.group(0), spelling(match.group(0)), spelling(match.group("num")), unit)
        )
    return found


# ---- what the results print -----------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _spellings(value: float, written: str, unit: str | None) -> frozenset[str]:
    """The spellings of the texts a value (``written``: its repr, which keeps 1 from 1.0 and -0.0
    from 0.0 in the memory's key) prints as: a figure's in ``unit``
    (_unit_texts), a plain value's with none (_plain_texts), up to the first filter that cannot
    print it (infinite, too large). Remembered: a serve session and a suite index the same
    day's numbers again and again, forty filters each."""
    found: list[str] = []
    try:
        for text in _unit_texts(value, unit) if unit is not None else _plain_texts(value):
            found.append(spelling(text))
    except (ValueError, TypeError, ArithmeticError, OverflowError):
        pass  # the texts before it stand; a value no filter can print is on no post
    return frozenset(found)


def _plain_texts(value: float) -> Iterator[str]:
    """Every text a filter writes for a plain value, with the unit the filter writes."""
    yield numbers.number(value)
    yield numbers.count(value)
    yield numbers.thousands(value)
    yield numbers.setting(value)
    for figures in (2, 3, 4):
        yield numbers.precise(value, figures)
    for digits in DIGITS:
        yield numbers.fixed(value, digits)
        yield numbers.pct(value, digits)
        yield numbers.multiple(value, digits)
        yield numbers.gib(value, digits)
        yield numbers.ms(value, digits)
    yield numbers.gib_short(value)
    yield from _unit_texts(value, "s")  # duration: a plain number is seconds
    yield from _unit_texts(value, "B")  # bytesize: a plain number is bytes


def _unit_texts(value: float, unit_name: str) -> Iterator[str]:
    """``value`` in ``unit_name`` written in its best unit and in each unit of its dimension, as
    ``figure``, ``duration`` and ``bytesize`` write it with or without a unit asked for."""
    yield numbers.value_text(value, unit_name)
    dimension = units.unit(unit_name).dimension
    for other in units.UNITS.values():
        if other.dimension == dimension and other.name != unit_name:
            yield numbers.value_text(value, unit_name, other.name)


def _leaves(value: Any, top: bool = True) -> Iterator[Any]:
    """Every number, figure ({value, unit}) and text in the results a post could quote."""
    if isinstance(value, dict):
        if isinstance(value.get("unit"), str) and value["unit"] in units.UNITS:
            if isinstance(value.get("value"), (int, float)) and not isinstance(value.get("value"), bool):
                yield value
        for key in sorted(value):
            if not (top and key in IGNORED):
                yield from _leaves(value[key], top=False)
    elif isinstance(value, list):
        if len(value) <= MAX_ROWS:
            for item in value:
                yield from _leaves(item, top=False)
    elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
        yield value


@dataclass(frozen=True)
class Index:
    """What results.json can put on a post: each value's texts (spelt as ``spelling`` does) and
    the names in it that hold digits."""

    texts: frozenset[str]
    names: tuple[str, ...]
    day: int = 0  # the day's number: "Day 15" in a later day's post names a day before it

    def traces(self, number: Number) -> bool:
        """Whether the number is one the results print. A time or a size may have its unit
        written by the template after a bare number (``{{ x | fixed(0) }} ms``); a percentage,
        a multiple and an abbreviation may not: the filter writes those itself."""
        if number.key in self.texts:
            return True
        return number.unit not in ("", "%", "x", "×", *_ABBREVIATIONS) and number.bare in self.texts

    def names_a_day(self, number: Number, text: str) -> bool:
        """Whether the number is an earlier day of the series written as one ("Day 15" in
        ``text``)."""
        named = number.unit == "" and bool(_DAY_BEFORE.match(text, number.start - 4, number.start))
        return named and number.bare.isdigit() and 1 <= int(number.bare) < self.day


def index(results: dict[str, Any]) -> Index:
    """Every text results.json's values print as, through every filter; the day and the series
    are results' own leaves (``day``, ``series``), so the spec's metadata is in it too."""
    texts: set[str] = set()
    names: set[str] = set()
    done: set[Any] = set()
    for leaf in _leaves(results):
        if isinstance(leaf, str):
            if len(leaf) <= MAX_NAME and re.search(r"\d", leaf):
                if re.search(r"[A-Za-z]", leaf):
                    names.add(leaf)
                else:
                    texts.add(spelling(leaf.strip()))  # a number kept as text: a version, "13.0"
            continue
        value, unit = (leaf["value"], leaf["unit"]) if isinstance(leaf, dict) else (leaf, None)
        seen = (value, unit if unit is not None else type(value))
        if seen not in done:  # as the first of its equals (1 and 1.0) printed it
            done.add(seen)
            texts.update(_spellings(value, repr(value), unit))
    texts.update(_ratio_texts([leaf for leaf in _leaves(results) if isinstance(leaf, dict)]))
    day = results.get("day")
    day = day if isinstance(day, int) and not isinstance(day, bool) else 0
    return Index(frozenset(texts), tuple(sorted(names, key=lambda n: (-len(n), n))), day)


def _ratio_texts(figures: list[dict[str, Any]]) -> Iterator[str]:
    """What ``ratio`` writes of each pair of figures of one dimension ("110" RAM reads to a
    round trip); a results file with more figures than a lab's few is left to its values, since
    every pair of hundreds would let nearly any whole number trace."""
    if len(figures) > MAX_RATIO_FIGURES:
        return
    for top in figures:
        for bottom in figures:
            if top is bottom or units.unit(top["unit"]).dimension != units.unit(bottom["unit"]).dimension:
                continue
            try:
                yield spelling(numbers.ratio(top, bottom))
            except (ValueError, TypeError, ArithmeticError, OverflowError):
                continue  # a zero figure divides nothing


# ---- tracing a draft ----------------------------------------------------------------------------


class _Spans:
    """Stretches of a text (start, end), merged and sorted: asks "does this overlap one?" fast."""

    def __init__(self, spans: list[tuple[int, int]]):
        merged: list[list[int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]

    def overlaps(self, start: int, end: int) -> bool:
        k = bisect.bisect_left(self.ends, start + 1)  # the first stretch ending after start
        return k < len(self.starts) and self.starts[k] < end

    def holds(self, start: int, end: int) -> bool:
        k = bisect.bisect_right(self.starts, start) - 1
        return k >= 0 and self.ends[k] >= end


class _Alignment:
    """Word-level alignment of text ``a`` against text ``b`` (a word diff, as changes.word_diff)."""

    def __init__(self, a: str, b: str):
        self.a = [m.span() for m in _WORD.finditer(a)]
        self.b = [m.span() for m in _WORD.finditer(b)]
        self.blocks = opcodes([a[s:e] for s, e in self.a], [b[s:e] for s, e in self.b])
        self._a_starts = [start for start, _ in self.a]
        self._block_starts = [i1 for _, i1, _, _, _ in self.blocks]

    def word_at(self, offset: int) -> int | None:
        """The word of ``a`` that holds ``offset``."""
        k = bisect.bisect_right(self._a_starts, offset) - 1
        return k if k >= 0 and offset < self.a[k][1] else None

    def block(self, k: int) -> tuple[str, int, int, int, int]:
        """The diff's block that holds word ``k`` of ``a``: (op, i1, i2, j1, j2)."""
        return self.blocks[bisect.bisect_right(self._block_starts, k) - 1]

    def same_word(self, offset: int) -> int | None:
        """Where in ``b`` the same word stands as the one at ``offset`` in ``a``, lined up."""
        k = self.word_at(offset)
        if k is None:
            return None
        op, i1, _, j1, _ = self.block(k)
        if op != "equal":
            return None
        return self.b[j1 + k - i1][0] + offset - self.a[k][0]


def _span(spans: list[tuple[int, int]], first: int, last: int) -> tuple[int, int]:
    """From the start of word ``first`` to the end of word ``last - 1``; empty when none."""
    return (spans[first][0], spans[last - 1][1]) if first < last else (0, 0)


class _Renders:
    """A draft beside its fresh render and the render before it, each aligned once."""

    def __init__(self, draft: str, fresh: str | None, previous: str | None, thread: bool):
        self.fresh = self.then = self.moved = None
        self.was: list[Number] = []
        self.now: list[Number] = []
        if fresh is not None and max(len(draft), len(fresh), len(previous or "")) <= MAX_ALIGN_CHARS:
            self.fresh = _Alignment(draft, fresh)
            if previous is not None:
                self.then, self.moved = _Alignment(draft, previous), _Alignment(previous, fresh)
                self.was, self.now = numbers_in(previous, thread=thread), numbers_in(fresh, thread=thread)
        self.was_at = {n.start: n for n in self.was}

    def printed(self, number: Number) -> bool:
        """Whether the fresh render printed this very number at this spot."""
        return self.fresh is not None and self.fresh.same_word(number.start) is not None

    def stale(self, number: Number) -> tuple[bool, str | None]:
        """(stale, what the fresh render writes there instead): the previous render held this
        number at this spot (or, the words around it rewritten, anywhere) and the fresh render
        does not."""
        if self.then is None or self.moved is None:
            return False, None
        spot = self.then.same_word(number.start)
        if spot is None or spot not in self.was_at or self.was_at[spot].key != number.key:
            if any(n.key == number.key for n in self.now):
                return False, None
            spot = next((n.start for n in self.was if n.key == number.key), None)
            if spot is None:
                return False, None
        k = self.moved.word_at(spot)
        if k is None:
            return False, None
        op, i1, i2, j1, j2 = self.moved.block(k)
        if op == "equal":
            return False, None  # the fresh render still writes it there
        lo, hi = _span(self.moved.a, i1, i2)
        before = [n.start for n in self.was if lo <= n.start < hi]
        lo, hi = _span(self.moved.b, j1, j2)
        now = [n.text for n in self.now if lo <= n.start < hi]
        if not now:
            return True, None
        return True, now[min(before.index(spot) if spot in before else 0, len(now) - 1)]


def is_the_render(text: str, fresh: str | None) -> bool:
    """Whether a draft is the build's render of it (accepted marks aside): the engine's own
    words, with nothing in it to trace."""
    return fresh is not None and _accepted(text)[0] == strip_accepted(fresh)


def audit_draft(
    draft: str,
    text: str,
    results: Index,
    *,
    fresh: str | None = None,
    previous: str | None = None,
    thread: bool = False,
) -> list[Finding]:
    """The numbers in ``text`` (the draft named ``draft``, as the person has it) that trace to
    nothing: not printed at that spot by ``fresh`` (the build's render of it), not a value of
    ``results``, not accepted. A draft identical to its fresh render is the engine's own and has
    none. ``previous`` is the render the person saw before the fresh one: a number it held at
    the spot is reported stale, with what the fresh render says there, even where some other
    result happens to print the same."""
    if is_the_render(text, fresh):
        return []
    clean, accepted_at = _accepted(text)
    accepted = _Spans(accepted_at)
    names = _Spans([m.span() for name in results.names for m in re.finditer(re.escape(name), clean)])
    renders = _Renders(clean, strip_accepted(fresh) if fresh is not None else None, previous, thread)
    line_starts = [0] + [m.end() for m in re.finditer("\n", clean)]
    lines: dict[int, str] = {}  # each line's text once, shared by its findings (not a copy each)
    found = []
    for number in numbers_in(clean, thread=thread):
        if accepted.holds(number.start, number.end) or names.overlaps(number.start, number.end):
            continue
        if renders.printed(number):
            continue
        stale, now = renders.stale(number)
        if not stale and (results.traces(number) or results.names_a_day(number, clean)):
            continue
        line = bisect.bisect_right(line_starts, number.start)
        line_start = line_starts[line - 1]
        if line not in lines:
            line_end = clean.find("\n", number.start)
            lines[line] = clean[line_start : line_end if line_end >= 0 else len(clean)]
        found.append(
            Finding(
                draft=draft,
                line=line,
                column=number.start - line_start,
                text=number.text,
                line_text=lines[line],
                now=now,
                stale=stale,
            )
        )
    return found


MAX_LISTED = 20  # findings of one draft listed one a line; the rest are counted


def listed(findings: list[Finding], limit: int = MAX_LISTED) -> list[str]:
    """Each finding's line, at most ``limit`` of each draft's, then how many more that draft
    has: a pasted table of a thousand numbers is one mistake to read about, not a thousand."""
    lines: list[str] = []
    shown: dict[str, int] = {}
    for finding in findings:
        count = shown[finding.draft] = shown.get(finding.draft, 0) + 1
        if count <= limit:
            lines.append(str(finding))
    for draft, count in shown.items():
        if count > limit:
            lines.append(
                f"{draft}: {count - limit:,} more numbers that trace to no result (each marked on the review page)"
            )
    return lines


def segments(text: str, findings: list[Finding]) -> list[tuple[str, str | None]]:
    """``text`` (a draft or a piece of one, accepted numbers stripped) cut into (words, None) and
    (number, why) pieces, the findings marked: what the review page prints. A finding is found by
    its line's words, so a piece cut from the draft (a post, the part above the fold) marks it too."""
    by_line: dict[str, list[Finding]] = {}
    keys: dict[int, str] = {}  # a line's key once, however many findings it has
    for finding in findings:
        key = keys.get(id(finding.line_text))
        if key is None:
            key = keys[id(finding.line_text)] = finding.line_text.rstrip()  # shown lines lose trailing spaces
        by_line.setdefault(key, []).append(finding)
    out: list[tuple[str, str | None]] = []
    plain: list[str] = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        marks = sorted(by_line.get(body.rstrip(), []), key=lambda f: f.column)
        at = 0
        for finding in marks:
            if finding.column < at:
                continue
            plain.append(body[at : finding.column])
            out.append(("".join(plain), None))
            plain = []
            out.append((finding.text, finding.why))
            at = finding.end
        plain.append(line[at:])
    out.append(("".join(plain), None))
    return [(words, why) for words, why in out if words]


# ---- a day's folder -----------------------------------------------------------------------------


def record(
    drafts: dict[str, str], seen: dict[str, str], earlier: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What a build keeps for the next audit: each draft's (and alt text's) fresh render, and the render the
    person saw before it (``seen``, the folder's previous base). A rebuild that changes nothing
    keeps the earlier previous render, so a number kept from it stays known as stale."""
    out: dict[str, Any] = {}
    for name, render in sorted(drafts.items()):
        before = seen.get(name)
        if before is None or before == render:
            before = _kept(earlier or {}, name, "previous")
        out[name] = {"render": render, "previous": before}
    return {"drafts": out}


def _kept(kept: dict[str, Any], name: str, key: str) -> str | None:
    """One text of a record (``record``) read back, or None where it is missing or malformed."""
    drafts = kept.get("drafts")
    entry = drafts.get(name) if isinstance(drafts, dict) else None
    text = entry.get(key) if isinstance(entry, dict) else None
    return text if isinstance(text, str) else None


def _load(path: Path) -> dict[str, Any]:
    """A JSON object the build wrote, within the results' limit; {} if missing or unreadable
    (a day with no record, or a hand-mangled one, is audited with what is there)."""
    return read_json_object(path, MAX_RESULTS_BYTES, "results") or {}


@functools.lru_cache(maxsize=4)
def _index_of(results_text: str) -> Index | None:
    """The index of one results.json text, kept: a build audits its folder for its warnings and
    again for its review page, and ``make review`` once per page. None for a text that is not a
    results object (a hand-mangled file, or one nested past any a build writes)."""
    try:
        results = load_json(results_text, "results.json", "results")
    except UserError:
        return None
    return index(results) if isinstance(results, dict) else None


def read_record(folder: Path) -> dict[str, Any]:
    """The last build's record (``record``); none if it is missing or unreadable."""
    return _load(Path(folder) / AUDIT)


def folder_findings(folder: Path, drafts: dict[str, str] | None = None) -> list[Finding]:
    """Every finding in a built day's folder: its drafts and its charts' alt texts, which are
    posted too (or ``drafts``, read already), against
    its results.json and the renders the last build recorded (without a record, the renders in
    ``.base.json``). A folder whose results cannot be read has nothing to trace against: none."""
    folder = Path(folder)
    traced: Index | None = None  # read when a draft is not the engine's own: most builds, never
    kept = read_record(folder)
    base = read_base(folder)
    threads = {p.draft: p.thread for p in platforms()}
    names = [*threads, *sorted(p.name for p in folder.glob(f"*{ALT_SUFFIX}"))]
    found: list[Finding] = []
    for name in names:
        text = (drafts or {}).get(name)
        if text is None and (folder / name).is_file():
            try:
                text = read_text_limited(folder / name, MAX_DRAFT_BYTES, "draft", follow_symlinks=False)
            except UserError:
                text = None  # the platform check names it
        if text is None:
            continue
        fresh = _kept(kept, name, "render") or base.get(name)
        previous = _kept(kept, name, "previous")
        if is_the_render(text, fresh):
            continue
        if traced is None:
            try:
                traced = _index_of(
                    read_text_limited(
                        folder / "results.json", MAX_RESULTS_BYTES, "results", follow_symlinks=False
                    )
                )
            except (OSError, UserError):
                return []
            if traced is None:
                return []
        found += audit_draft(
            name, text, traced, fresh=fresh, previous=previous, thread=threads.get(name, False)
        )
    return found
