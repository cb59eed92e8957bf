"""Validation in one place: the strict base model, the constrained types, and the one translation
of a pydantic error into the one line a person sees.

Every input the engine reads through a pydantic model (a day's spec, a measurement file, and the
workload and CLI models that adopt it) fails the same way: ``file: field.path: message``, with
the field written as the user wrote it, the message in plain words ("must be at least 1, got 0",
"unknown field 'slot'; did you mean 'slots'?"), every mistake on a line of its own (up to
MAX_REPORTED_ERRORS), so a spec with three mistakes takes one run to fix, not three.

The command line is a second way into the same models: a command gathers its flags into the
shape the YAML has and validates that (``validate_flags``), so a flag obeys exactly the limits of
its spec key, and an error names the flag (``--block-size: must be at most 1024, got 5000``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine import limits
from engine.errors import UserError
from engine.limits import CLOCK_SKEW_SECONDS

if TYPE_CHECKING:  # only annotated: a spec-only process need not load argparse
    import argparse

# strict: YAML's `true` must not pass for 1, nor 16.5 for 16.
PositiveInt = Annotated[int, Field(ge=1, strict=True)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
# Memory sizes in GiB: no device holds a pebibyte, so anything larger is a typo.
GiB = Annotated[float, Field(ge=0, le=2**20, allow_inf_nan=False)]
# A name a template, a chart or a headline quotes a number by (a figure, a set value, a table,
# a column, a declared chart): a Python-style lower-case name, short enough to type.
Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
# Words a post or a table shows: one line each, bounded (a description; a short label).
# One line: none of the characters str.splitlines breaks at (a line feed in a series name or a
# machine name would start a new post of an X thread), and no other control character (a
# terminal escape would reach the alt text and draw as a missing glyph on a chart).
# Nor a bidirectional embedding, override or isolate (U+202A-U+202E, U+2066-U+2069): one in a
# machine's name would reorder the rest of the post around it. Nor only spaces.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_NOT_IN_A_LINE = r"\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ONE_LINE = rf"^[^{_NOT_IN_A_LINE}]*$"
# The same, with at least one character that is not a space (a pattern, not a Python check: the
# spec's models are built in every process, and a function validator on every text field costs).
_SAYS_SOMETHING = rf"^[^{_NOT_IN_A_LINE}]*[^\s{_NOT_IN_A_LINE}][^{_NOT_IN_A_LINE}]*$"
MAX_ONE_LINE_CHARS = 160
OneLine = Annotated[str, Field(min_length=1, max_length=MAX_ONE_LINE_CHARS, pattern=_SAYS_SOMETHING)]
MAX_LABEL_CHARS = 40
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS, pattern=_SAYS_SOMETHING)]
# A sentence a measurement file keeps (a note on how it was measured): one line, longer.
MAX_SENTENCE_CHARS = 1_000
Sentence = Annotated[str, Field(max_length=MAX_SENTENCE_CHARS, pattern=_ONE_LINE)]


def one_line_flag(value: str, flag: str) -> str:
    """A flag's text that reaches a post (``--machine``): one line of at most
    MAX_ONE_LINE_CHARS, checked before any work, or a UserError naming the flag."""
    if not value.strip():
        raise UserError("must not be empty", field=flag)
    if len(value) > MAX_ONE_LINE_CHARS:
        raise UserError(f"must be at most {MAX_ONE_LINE_CHARS} characters, got {len(value):,}", field=flag)
    if re.fullmatch(_ONE_LINE, value) is None:
        raise UserError(f"must be one line of text; it holds {_control(value)}", field=flag)
    return value


def not_one_line(text: str) -> str | None:
    """What in ``text`` a one-line text may not hold (a control character, a line break, a
    direction override), named; None when it holds none."""
    return None if re.fullmatch(_ONE_LINE, text) is not None else _control(text)


def _control(text: str) -> str:
    """The first character a one-line text may not hold, named."""
    found = next((c for c in text if re.fullmatch(_ONE_LINE, c) is None), "\n")
    kind = "a line break" if found in LINE_BREAKS else "a control character"
    return f"{kind} (U+{ord(found):04X})"


def recorded_date(value: str) -> str:
    """A measurement's date as it must be written: ISO-8601 in UTC, and not in the future. A
    date ahead of this machine's clock by more than limits.CLOCK_SKEW_SECONDS (another machine's
    clock off by hours) was typed, not recorded. A ValueError says which (a validation error)."""
    when = datetime.fromisoformat(value)
    offset = when.utcoffset()
    if offset is None or offset.total_seconds() != 0:
        raise ValueError("must be ISO-8601 in UTC, e.g. 2026-01-31T12:00:00Z")
    latest = datetime.now(UTC) + timedelta(seconds=CLOCK_SKEW_SECONDS)
    if when > latest:
        raise ValueError(
            f"is in the future (after {latest:%Y-%m-%d %H:%M} UTC, this machine's clock plus "
            f"{CLOCK_SKEW_SECONDS // 3600} h): a measurement is dated when it was made"
        )
    return value


# Counts more than one section asks for, each with a stated limit (engine/limits.py): a typo
# must not ask for a billion of anything.
Slots = Annotated[int, Field(ge=1, le=limits.MAX_SLOTS, strict=True)]
ContextTokens = Annotated[int, Field(ge=1, le=limits.MAX_CONTEXT_TOKENS, strict=True)]
TensorParallel = Annotated[int, Field(ge=1, le=limits.MAX_TP, strict=True)]  # GPUs per replica
# A key added after days were built: None when not given, and then left out of results.json's
# record of the spec, so the results of those days keep their bytes.
Unset: Any = Field(default=None, exclude_if=lambda value: value is None)


class Strict(BaseModel):
    """Unknown keys are errors, and models are immutable once loaded."""

    model_config = ConfigDict(extra="forbid", frozen=True)


M = TypeVar("M", bound=BaseModel)
# Mistakes one report lists, one line each: every one a person can fix in one pass, without a
# screenful of the same slip repeated down a long list.
MAX_REPORTED_ERRORS = 20


def validate(
    model: type[M], data: Any, *, file: str | Path | None, context: dict[str, Any] | None = None
) -> M:
    """``model`` from ``data``, or a UserError naming the file and the first bad field.
    ``context`` reaches the validators that need more than their own field (pydantic's)."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise one_line(exc, model, data, file=file) from None


def one_line(
    exc: ValidationError,
    model: type[BaseModel],
    data: Any,
    *,
    file: str | Path | None,
    prefix: tuple[str, ...] = (),
) -> UserError:
    """Turn pydantic's report into one line: the first error, in the input's own words.

    ``prefix`` is where ``data`` sits in a larger input (``batching.workload`` for a workload
    validated on its own), so the field is still named from the top of the file.
    """
    errors = exc.errors()
    # A typo shows up twice (the unknown key, and the real key missing): name the typo, and
    # leave out the missing keys beside it.
    typo_parents = {tuple(e["loc"][:-1]) for e in errors if e["type"] == "extra_forbidden"}
    errors = [e for e in errors if not (e["type"] == "missing" and tuple(e["loc"][:-1]) in typo_parents)]
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")  # stable: the input's order otherwise
    found: dict[str | None, UserError] = {}
    for err in errors:
        loc = list(err["loc"])
        shown = ".".join([*prefix, *_user_path(data, loc, missing=err["type"] == "missing")]) or None
        if shown not in found:  # a union's members each report the same field: once is enough
            found[shown] = UserError(_message(err, model, [str(p) for p in loc]), file=file, field=shown)
    first, *rest = found.values()
    if 1 + len(rest) > MAX_REPORTED_ERRORS:  # the last line says how many are not shown
        kept = MAX_REPORTED_ERRORS - 2
        rest = [*rest[:kept], UserError(f"and {len(rest) - kept} more", file=file)]
    return UserError(first.message, file=file, field=first.field, more=rest)


def _user_path(data: Any, loc: list[Any], *, missing: bool) -> list[str]:
    """The part of pydantic's location the user wrote: keys found in their own data.

    pydantic inserts names of its own into locations (a union member's tag, a validator's
    name, a shorthand's 'inline'); walking the user's data tells them apart from real keys.
    """
    shown: list[str] = []
    node = data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif not (missing and i == len(loc) - 1):
            continue  # inserted by pydantic, not a key of the user's
        shown.append(str(part))
    return shown


def _message(err: Mapping[str, Any], model: type[BaseModel], loc: list[str]) -> str:
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(model, loc)
    if kind == "greater_than_equal":
        return f"must be at least {_num(ctx['ge'])}, got {_shown(got)}"
    if kind == "greater_than":
        return f"must be greater than {_num(ctx['gt'])}, got {_shown(got)}"
    if kind == "less_than_equal":
        return f"must be at most {_num(ctx['le'])}, got {_shown(got)}"
    if kind == "less_than":
        return f"must be less than {_num(ctx['lt'])}, got {_shown(got)}"
    if kind in {"int_type", "int_parsing", "int_from_float", "bool_type"}:
        return f"must be a whole number, got {_shown(got)}"
    if kind in {"float_type", "float_parsing"}:
        return f"must be a number, got {_shown(got)}"
    if kind == "finite_number":
        return f"must be a finite number, got {_shown(got)}"
    if kind == "string_type":
        return f"must be text, got {_shown(got)}"
    if kind == "list_type":
        return f"must be a list, got {_shown(got)}"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} item(s)"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length')} item(s), the stated limit"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters, the stated limit; got {len(got or ''):,}"
    if kind == "string_too_short":
        return f"must have at least {ctx.get('min_length')} character(s)"
    if kind == "string_pattern_mismatch" and ctx.get("pattern") in (_ONE_LINE, _SAYS_SOMETHING):
        if re.fullmatch(_ONE_LINE, str(got)) is not None:  # one line, but only spaces
            return "must say something: it is only spaces"
        return f"must be one line of text; {_shown(got)} holds {_control(str(got))}"
    if kind == "string_pattern_mismatch":
        return f"{_shown(got)} is not one word (letters, digits, underscores; CamelCase reads best)"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {_shown(got)}"
    if kind == "union_tag_invalid":
        return f"kind must be one of {ctx.get('expected_tags')}, got {ctx.get('tag')!r}"
    if kind == "union_tag_not_found":
        return "needs a 'kind'"
    msg: str = err["msg"]
    return msg.removeprefix("Value error, ")


def _shown(value: Any, limit: int = 60) -> str:
    """A value as the message quotes it, cut short: a 2-million-entry list is not a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _num(value: Any) -> Any:
    """0.0 → 0 in messages: bounds are written as the user would write them."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _unknown_field(model: type[BaseModel], loc: list[str]) -> str:
    name = loc[-1] if loc else "?"
    known = _fields_at(model, loc[:-1])
    if not known:
        return f"unknown field '{name}': this value takes no fields"
    if name in known:  # a field of another form of a union: a calibrated step time's `file`
        return f"unknown field '{name}': this kind takes no '{name}' (another kind does)"
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else f"; known fields: {', '.join(known)}"
    return f"unknown field '{name}'{hint}"


def _fields_at(root: type[BaseModel], loc: list[str]) -> list[str]:
    """The field names valid at a location, for the 'did you mean' hint: every form a union
    allows (a workload is a trace or a generator), not only the first."""
    models: list[Any] = [root]
    for part in loc:
        found: list[Any] = []
        for model in models:
            fields = getattr(model, "model_fields", {})
            if part in fields:
                found += _models_of(fields[part].annotation)
        if found:  # else a name pydantic inserted (a union's tag), not a key of the user's
            models = found
    return sorted({name for model in models for name in _names(model)})


def _names(model: Any) -> list[str]:
    """A model's field names as the input spells them (its aliases, where it has them)."""
    fields = getattr(model, "model_fields", {})
    return sorted(info.alias or name for name, info in fields.items())


def _models_of(annotation: Any) -> list[Any]:
    """Every BaseModel inside Optional[...] / list[...] / Union[...] / Annotated[...]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[Any] = []
    for arg in (*getattr(annotation, "__args__", ()), *getattr(annotation, "__metadata__", ())):
        found += _models_of(arg)
    return found


# ---- the command line -----------------------------------------------------------------------


def validate_flags(
    model: type[M], data: Mapping[str, Any], *, flags: Mapping[str, str], required: Mapping[str, str] = {}
) -> M:
    """``model`` from a command line's flags, gathered into the shape the YAML has.

    ``flags`` maps a field's dotted path to the flag that sets it (``budget.reserve_gib`` →
    ``--reserve-gib``; a path's items share its flag). ``required`` says what to give for a
    missing field no single flag sets (a GPU: by name, or by its memory).
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _flag_error(exc, model, data, flags, required) from None


def _flag_error(
    exc: ValidationError,
    model: type[BaseModel],
    data: Mapping[str, Any],
    flags: Mapping[str, str],
    required: Mapping[str, str],
) -> UserError:
    errors = exc.errors()
    # Flags are gathered by the command, never misspelt: an unknown field is a flag that does
    # not go with the others (a vLLM-only flag under the reserve budget), and it comes first.
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    kind = err["type"]
    path = _user_path(data, list(err["loc"]), missing=kind == "missing")
    dotted = ".".join(path)
    flag = next((flags[p] for p in _prefixes(path) if p in flags), None)
    parent = _node(data, path[:-1])
    chosen = parent.get("kind") if isinstance(parent, Mapping) and len(path) >= 2 else None
    where = f"the {chosen!r} {path[-2]}" if chosen is not None else None
    if kind == "extra_forbidden":
        message = f"does not apply to {where}" if where else "does not apply here"
    elif kind == "missing":
        message = required.get(dotted) or (f"required by {where}" if where else "required")
    else:
        message = _message(err, model, [str(p) for p in err["loc"]])
    return UserError(message, field=flag or dotted or None)


def _prefixes(path: list[str]) -> Iterator[str]:
    """'a.b.c', 'a.b', 'a': the most specific flag first."""
    for end in range(len(path), 0, -1):
        yield ".".join(path[:end])


def _node(data: Any, path: list[str]) -> Any:
    for part in path:
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


@contextmanager
def blame_flag(flag: str, fields: Mapping[str, str] = {}) -> Iterator[None]:
    """Re-raise a UserError from deeper code as one about ``flag``, or about the flag ``fields``
    maps the error's own field to; an error that names a file (a config.json) stays as it is."""
    try:
        yield
    except UserError as err:
        if err.file is not None:
            raise
        raise UserError(err.message, field=fields.get(err.field or "", flag)) from None


def given(args: argparse.Namespace, keys: tuple[str, ...]) -> dict[str, Any]:
    """The flags among ``keys`` that were given, under their spec keys: a flag left out is left
    out of the data too, so the model's default stands, as for a spec that leaves out the key."""
    return {key: getattr(args, key) for key in keys if getattr(args, key) is not None}


def whole_number(flag: str) -> Callable[[str], int]:
    """An argparse ``type`` that only reads a whole number; its range is the model's to check."""

    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise UserError(f"must be a whole number, got {_shown(text)}", field=flag) from None

    return parse


def whole_flag(flag: str, least: int, most: int) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number within [least, most], for a flag that no spec key
    mirrors (--port, --replicas). A flag that is a spec key gets its range from the key's model
    instead (validate_flags). A mistake is a UserError naming the flag, raised before any work:
    2^63 slots used to overflow numpy halfway through a run."""
    read = whole_number(flag)

    def parse(text: str) -> int:
        value = read(text)
        if value < least:
            raise UserError(f"must be at least {least:,}, got {text}", field=flag)
        if value > most:
            raise UserError(f"must be at most {most:,} (the stated limit), got {text}", field=flag)
        return value

    return parse


def number(flag: str) -> Callable[[str], float]:
    """An argparse ``type`` that only reads a number (inf and nan too: the model refuses them)."""

    def parse(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise UserError(f"must be a number, got {_shown(text)}", field=flag) from None

    return parse
