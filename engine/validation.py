"""Validation in one place: the strict base model, the constrained types, and the one translation
of a pydantic error into the one line a person sees.

Every input the engine reads through a pydantic model (a day's spec, a measurement file, and the
workload and CLI models that adopt it) fails the same way: ``file: field.path: message``, with
the field written as the user wrote it, the message in plain words ("must be at least 1, got 0",
"unknown field 'slot'; did you mean 'slots'?"), and only the first error, since the fix of one
often changes the next.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.errors import UserError

# strict: YAML's `true` must not pass for 1, nor 16.5 for 16.
PositiveInt = Annotated[int, Field(ge=1, strict=True)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
# Memory sizes in GiB: no device holds a pebibyte, so anything larger is a typo.
GiB = Annotated[float, Field(ge=0, le=2**20, allow_inf_nan=False)]


class Strict(BaseModel):
    """Unknown keys are errors, and models are immutable once loaded."""

    model_config = ConfigDict(extra="forbid", frozen=True)


M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], data: Any, *, file: str | Path | None) -> M:
    """``model`` from ``data``, or a UserError naming the file and the first bad field."""
    try:
        return model.model_validate(data)
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
    # A typo shows up twice (the unknown key, and the real key missing): name the typo.
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = list(err["loc"])
    shown = [*prefix, *_user_path(data, loc, missing=err["type"] == "missing")]
    message = _message(err, model, [str(p) for p in loc])
    return UserError(message, file=file, field=".".join(shown) or None)


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
