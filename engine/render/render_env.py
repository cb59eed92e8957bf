"""The one kind of Jinja environment every template renders in: a sandbox with a budget.

Why: a template is code. A day's templates are written by whoever writes the day, and plain
Jinja lets them reach Python (``lipsum.__globals__["os"]``), loop for ever (``range`` of a huge
number), or build a string larger than memory (a macro that doubles its text). Building a day
someone else wrote must be safe, so every template (drafts, carousel words, review pages) runs in
Jinja's ``ImmutableSandboxedEnvironment`` (no underscore attributes, no mutating of lists or
dicts) narrowed further here:

- filters, tests and globals: only the project's own plus the subset of Jinja's builtins named
  below (``JINJA_FILTERS``, ``JINJA_TESTS``; no globals at all: ``range``, ``lipsum``,
  ``cycler``, ``joiner``, ``namespace`` and ``dict`` are gone, no template uses them);
- calls: a template may call its macros and the few read-only methods in ``_METHODS``; nothing
  else (no ``str.format``, no ``float.hex``: a number becomes text through a filter);
- ``~`` joins text only, and ``%`` never formats text: both would turn a number into text past
  the filters;
- a budget per render (engine.limits): steps (each loop iteration, call, attribute lookup and
  intercepted operator), seconds, and characters of text produced anywhere, inside macros
  included. Counting is done by the environment itself (its overridden ``getattr``, ``getitem``,
  ``call`` and ``call_binop``, plus hooks written into each template's syntax tree when it is
  compiled), so no thread or signal is needed: the template stops at the next step past a cap.
"""

from __future__ import annotations

import reprlib
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, cast

import jinja2
from jinja2 import nodes
from jinja2.defaults import DEFAULT_FILTERS, DEFAULT_TESTS
from jinja2.exceptions import SecurityError
from jinja2.runtime import Macro, markup_join
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from engine.limits import MAX_RENDER_SECONDS, MAX_RENDER_STEPS, MAX_TEMPLATE_INT_BITS

# Jinja's own filters a template may use: they pick, count and order data. None of them turns a
# value into text (no ``string``, ``format``, ``join``, ``replace``...), runs arbitrary code
# (``attr`` aside, which goes through the sandbox like ``.name``) or is random (``random``).
JINJA_FILTERS = (
    "first",
    "last",
    "length",
    "list",
    "map",
    "max",
    "min",
    "reject",
    "rejectattr",
    "select",
    "selectattr",
    "sort",
    "unique",
)

# Jinja's own tests: each answers yes or no about a value and runs nothing.
JINJA_TESTS = (
    "defined",
    "undefined",
    "none",
    "boolean",
    "true",
    "false",
    "number",
    "string",
    "mapping",
    "sequence",
    "iterable",
    "in",
    "eq",
    "equalto",
    "==",
    "ne",
    "!=",
    "lt",
    "lessthan",
    "<",
    "le",
    "<=",
    "gt",
    "greaterthan",
    ">",
    "ge",
    ">=",
    "even",
    "odd",
)

# Methods a template may call, by the type they belong to: read-only views of a mapping and
# yes/no questions about text (the review page asks `name.endswith(".gif")`).
_METHODS: dict[type, frozenset[str]] = {
    dict: frozenset({"items", "keys", "values"}),
    str: frozenset({"startswith", "endswith"}),
}

# The environment's own hooks, called from the code _Budgeted writes into each template.
_HOOKS = frozenset({"_iterate", "_join", "_charge", "_made"})


def weight(value: Any, limit: int) -> int:
    """How much a value a template made holds: its characters and items, counted as printing or
    iterating it meets them, so a list repeated by reference counts each time ([["a"] * n] * n
    is n² however few objects it is). Counting stops once past ``limit``."""
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, (list, tuple, Mapping)):
            total += len(item)
            if total <= limit:  # a long one is over on its length, before its items are looked at
                stack.extend(item.items() if isinstance(item, Mapping) else item)
        else:
            total += 1
    return total


_QUOTED = reprlib.Repr()  # a few items of a value and 60 characters of its text, however big
_QUOTED.maxlevel, _QUOTED.maxlist, _QUOTED.maxtuple, _QUOTED.maxdict = 3, 6, 6, 4
_QUOTED.maxstring = _QUOTED.maxother = _QUOTED.maxlong = 60


def quoted(value: Any) -> str:
    """A value as an error quotes it: bounded (its whole repr could run to gigabytes)."""
    return _QUOTED.repr(value)


class RenderCapExceeded(Exception):
    """A render went past one of the caps in engine.limits (steps, seconds, characters)."""


class Budget:
    """What one render has spent so far, against the caps."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.steps = 0
        self.chars = 0
        self.deadline: float | None = None  # set by the first step, so an idle budget never expires

    def step(self) -> None:
        self.steps += 1
        if self.deadline is None:
            self.deadline = time.monotonic() + MAX_RENDER_SECONDS
        if self.steps > MAX_RENDER_STEPS:
            raise RenderCapExceeded(
                f"over the limit of {MAX_RENDER_STEPS:,} steps for one render "
                "(a loop or a macro calling itself without end?)"
            )
        if time.monotonic() > self.deadline:
            raise RenderCapExceeded(f"over the limit of {MAX_RENDER_SECONDS:g} s for one render")

    def text(self, chars: int) -> None:
        self.chars += chars
        if self.chars > self.max_chars:
            self.over(self.chars)

    def fits(self, chars: int) -> None:
        """A value a template builds (a joined text, a repeated list) may not outgrow the output."""
        if chars > self.max_chars:
            self.over(chars)

    def over(self, chars: int) -> None:
        raise RenderCapExceeded(
            f"over the limit of {self.max_chars:,} characters of text for one render ({chars:,} so far)"
        )


class SandboxedTemplate(jinja2.Template):
    """A template whose ``render`` starts a fresh budget (imports and includes share it).

    Anything rendered another way (``generate``, ``stream``) spends the budget the environment
    was created with, so it is capped too, only all such renders together.
    """

    def render(self, *args: Any, **kwargs: Any) -> str:
        env = cast(Sandbox, self.environment)
        outer = env.budget
        env.budget = Budget(env.max_chars)
        try:
            return super().render(*args, **kwargs)
        finally:
            env.budget = outer


class _Budgeted(NodeTransformer):
    """Writes the budget's hooks into a parsed template: every loop's items are counted as they
    are taken, every ``~`` goes through ``Sandbox._join``, and every output line charges its
    literal text (printed values are charged by ``Sandbox._finalize``)."""

    def __init__(self, env: Sandbox) -> None:
        self.env = env

    def _hook(self, name: str, args: list[nodes.Expr], lineno: int) -> nodes.Call:
        call = nodes.Call(nodes.EnvironmentAttribute(name), args, [], None, None, lineno=lineno)
        call.set_environment(self.env)
        return call

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = self._hook("_iterate", [cast(nodes.Expr, node.iter)], node.lineno)
        return node

    def visit_List(self, node: nodes.List) -> nodes.Node:
        self.generic_visit(node)
        return self._hook("_made", [node], node.lineno)

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        return self._hook("_made", [node], node.lineno)

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        self.generic_visit(node)
        return node if node.ctx != "load" else self._hook("_made", [node], node.lineno)

    def visit_Filter(self, node: nodes.Filter) -> nodes.Node:
        self.generic_visit(node)
        return self._hook("_made", [node], node.lineno)

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return self._hook("_join", list(node.nodes), node.lineno)

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        literal = sum(len(child.data) for child in node.nodes if isinstance(child, nodes.TemplateData))
        if literal:
            const = nodes.Const(literal, lineno=node.lineno)
            node.nodes.insert(0, self._hook("_charge", [const], node.lineno))
        return node


def _callable_name(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__


class Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with the filters, tests, calls and budget described above.

    ``filters``: the project's own, added to the builtin subset. ``printed``: a check on every
    value a template prints (the drafts' rule for unformatted numbers), before it is charged.
    ``max_chars``: the text one render may produce.
    """

    # `+` and `*` can build huge strings and lists, `*` and `**` huge integers, `%` formats text.
    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def __init__(
        self,
        *,
        max_chars: int,
        filters: Mapping[str, Callable[..., Any]] | None = None,
        printed: Callable[[Any], Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(finalize=self._finalize, **options)
        self.filters = {name: DEFAULT_FILTERS[name] for name in JINJA_FILTERS} | dict(filters or {})
        self.tests = {name: DEFAULT_TESTS[name] for name in JINJA_TESTS}
        self.globals.clear()
        self.template_class = SandboxedTemplate
        self.max_chars = max_chars
        self._printed = printed
        self.budget = Budget(max_chars)

    # ---- compiling: the hooks go into every template ------------------------------------------

    def compile(
        self,
        source: str | nodes.Template,
        name: str | None = None,
        filename: str | None = None,
        raw: bool = False,
        defer_init: bool = False,
    ) -> Any:
        if isinstance(source, str):
            source = self.parse(source, name, filename)
        source = cast(nodes.Template, _Budgeted(self).visit(source))
        return super().compile(source, name, filename, raw, defer_init)  # type: ignore[call-overload]

    # ---- what the sandbox intercepts, each a step -----------------------------------------------

    def getattr(self, obj: Any, attribute: str) -> Any:
        """``x.name``: on a mapping that has the key ``name``, its entry, before any method of
        the mapping (Jinja's order is the other way round). A lab's figure or a table's column
        may well be called ``keys``, ``items``, ``values`` or ``count``, and ``f.keys.label``
        must read that figure, not find dict.keys."""
        self.budget.step()
        if isinstance(obj, Mapping) and isinstance(attribute, str) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self.budget.step()
        return super().getitem(obj, argument)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        __self.budget.step()
        if not __self._may_call(__obj):
            raise SecurityError(
                f"{_callable_name(__obj)} may not be called: a template calls its macros only "
                "(numbers become text through a filter)"
            )
        return super().call(__context, __obj, *args, **kwargs)

    def _may_call(self, obj: Any) -> bool:
        if isinstance(obj, (Macro, jinja2.Undefined)):  # an undefined name fails with its own error
            return True
        if not isinstance(obj, (types.BuiltinMethodType, types.MethodType)):
            return False
        owner = obj.__self__
        if owner is self:
            return obj.__name__ in _HOOKS
        return any(isinstance(owner, kind) and obj.__name__ in names for kind, names in _METHODS.items())

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        self.budget.step()
        if operator == "%" and isinstance(left, str):
            raise SecurityError("'%' formats text past the filters: format a number with a filter")
        if operator == "**":
            _check_power(left, right)
        elif operator == "*":
            self._check_product(left, right)
        elif (
            operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple))
        ):
            self.budget.fits(len(left) + len(right))  # each was weighed whole when it was made
        return super().call_binop(context, operator, left, right)

    def _check_product(self, left: Any, right: Any) -> None:
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(times, int):
                times = max(times, 0)
                self.budget.fits(weight(seq, self.budget.max_chars // max(times, 1)) * times)
                return
        if isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > MAX_TEMPLATE_INT_BITS:
                raise RenderCapExceeded(_int_too_big("*"))

    # ---- the hooks written in by _Budgeted -----------------------------------------------------

    def _iterate(self, items: Iterable[Any]) -> Iterator[Any]:
        for item in items:
            self.budget.step()
            yield item

    @jinja2.pass_context
    def _join(self, context: jinja2.runtime.Context, *pieces: Any) -> str:
        for piece in pieces:
            if not isinstance(piece, (str, jinja2.Undefined)):
                shown = quoted(piece)
                raise SecurityError(
                    f"'~' joins text, not {shown[:60]}{'…' if len(shown) > 60 else ''}: "
                    "format a number with a filter first"
                )
        texts = [str(piece) for piece in pieces]  # an undefined piece fails here, with its name
        self.budget.fits(sum(map(len, texts)))
        return markup_join(pieces) if context.eval_ctx.autoescape else "".join(texts)

    def _made(self, value: Any) -> Any:
        """A list, mapping or tuple a template writes, or a filter's result, weighed whole as it
        is made (weight): ten references to a list of ten references to … is 10^k items to
        compare or print, and nothing a step counts once it is handed to C."""
        self.budget.step()
        if isinstance(value, (list, tuple, Mapping)):
            self.budget.fits(weight(value, self.budget.max_chars))
        return value

    def _charge(self, chars: int) -> str:
        self.budget.text(chars)
        return ""

    @jinja2.pass_context
    def _finalize(self, context: jinja2.runtime.Context, value: Any) -> Any:
        if self._printed is not None:
            value = self._printed(value)
        if isinstance(value, str):
            self.budget.text(len(value))
        elif not isinstance(value, jinja2.Undefined):  # an undefined value fails when printed
            self.budget.fits(weight(value, self.budget.max_chars))  # before its text is made
            self.budget.text(len(str(value)))
        return value


def _check_power(base: Any, exponent: Any) -> None:
    """An integer power is refused before it is computed when its result would pass the cap:
    ``37 ** 37 ** 37`` would otherwise run in C, where no step is counted, for ever."""
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if base.bit_length() * exponent > MAX_TEMPLATE_INT_BITS:
            raise RenderCapExceeded(_int_too_big("**"))


def _int_too_big(operator: str) -> str:
    return f"'{operator}' would make an integer over {MAX_TEMPLATE_INT_BITS:,} bits, past any figure"
