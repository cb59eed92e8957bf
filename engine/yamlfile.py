"""Reading the YAML people write: day specs, sweep files, catalog, price and reference entries.

Why one reader: every such file gets the same guards and the same one-line errors. Its text is
bounded in size (read by engine.limits) and in nesting, aliases followed (a 5,000-deep file
would end in a RecursionError in whatever walks it, instead of one line); an alias inside its
own anchor, a value without end, is refused; a key given twice is refused (YAML would silently
keep the last one); a malformed file is one line with its line and column.

Why the C parser: PyYAML's wheels carry libyaml, whose scanner and parser are about ten times
faster than the pure-Python ones. A build reads its spec and several catalog entries, and the
watch loop and the test suite read them hundreds of times. The constructors stay PyYAML's own
Python classes, so what a file means (YAML 1.1 tags, the safe types) does not depend on which
parser ran; where PyYAML was built without libyaml, the pure-Python parser is used.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import yaml

from engine.errors import UserError
from engine.limits import MAX_INT_DIGITS, MAX_YAML_DEPTH, MAX_YAML_VALUES, read_text_limited

Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


MERGE_TAG = "tag:yaml.org,2002:merge"


class UniqueKeyLoader(Loader):  # type: ignore[valid-type,misc]
    """The safe loader, refusing a key given twice, a key that is a list or mapping, or an
    integer of more than MAX_INT_DIGITS digits. Merge keys (``<<: *base``) work as YAML 1.1
    says: the mapping's own keys win over merged ones, and only its own keys must be unique."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        digits = sum(c.isdigit() for c in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"a {digits:,}-digit integer, over the limit of {MAX_INT_DIGITS} digits",
                node.start_mark,
            )
        value: int = super().construct_yaml_int(node)
        return value

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue  # SafeConstructor.flatten_mapping merges these below
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:  # `? [1, 2]`: a list or mapping as a key, which no field is
                raise yaml.constructor.ConstructorError(
                    None, None, "a list or mapping cannot be a key", key_node.start_mark
                ) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key}' is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", UniqueKeyLoader.construct_yaml_int)


def _no_binary(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """A spec is text a person reads: a base64 value (`!!binary aGVsbG8=`) would be taken for
    the words it hides, a title or a label no one reading the spec saw."""
    raise yaml.constructor.ConstructorError(
        None, None, "a !!binary value is not text a spec holds", node.start_mark
    )


UniqueKeyLoader.add_constructor("tag:yaml.org,2002:binary", _no_binary)


LIBYAML_CEILING = "exceeded maximum nesting depth"  # libyaml's problem at its 1,000 levels


def check_depth(text: str, path: str | Path, limit: int = MAX_YAML_DEPTH) -> None:
    """Refuse YAML nested deeper than ``limit`` before it is composed: the depth is the scanner's
    open blocks and brackets, counted as the tokens come. The pure-Python composer recursing
    through a 5,000-deep file would end in a RecursionError, and libyaml's composer stops at its
    own ceiling of 1,000 levels with a message that names no limit of ours; either way the
    tokens say where the limit is crossed. Any other refusal is a malformed file, which parse()
    reports with its position."""
    with contextlib.suppress(yaml.YAMLError):  # malformed as well: parse() says where
        _scan_depth(text, path, limit)


def _scan_depth(text: str, path: str | Path, limit: int) -> None:
    depth = 0
    starts = (
        yaml.BlockMappingStartToken,
        yaml.BlockSequenceStartToken,
        yaml.FlowMappingStartToken,
        yaml.FlowSequenceStartToken,
    )
    ends = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
    for token in yaml.scan(text, Loader=yaml.SafeLoader):  # the pure-Python scanner: one token at a time
        if isinstance(token, starts):
            depth += 1
            if depth > limit:
                _refuse_too_deep(path, limit, token.start_mark)
        elif isinstance(token, ends):
            depth -= 1


def _refuse_too_deep(path: str | Path, limit: int, mark: yaml.Mark) -> None:
    raise UserError(
        f"nested more than {limit} levels deep",
        file=path,
        field=_where(mark),
    )


def _where(mark: yaml.Mark) -> str:
    """A place in the file, as every YAML error names it."""
    return f"line {mark.line + 1}, column {mark.column + 1}"


def parse(text: str, path: str | Path) -> Any:
    """The document in ``text`` (read from ``path``), or a UserError naming where it breaks.

    With libyaml, the document is composed first (libyaml's composer is not Python's stack, and
    refuses past 1,000 levels) and its depth checked on the nodes, one walk instead of a second
    scan of every token; the token scan runs only for a file libyaml found too deep, to say
    where our limit is crossed. The pure-Python composer recurses, so there the tokens are
    counted before anything is composed."""
    if Loader is yaml.SafeLoader:
        check_depth(text, path)
    loader = UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_expanded(node, path)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        if getattr(exc, "problem", None) == LIBYAML_CEILING:
            check_depth(text, path)
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(
            f"malformed YAML: {problem}", file=path, field=_where(mark) if mark else None
        ) from None
    finally:
        loader.dispose()


def check_expanded(
    root: yaml.Node, path: str | Path, depth: int = MAX_YAML_DEPTH, values: int = MAX_YAML_VALUES
) -> None:
    """Refuse a composed document whose lists and mappings nest deeper than ``depth``, or that
    stands for more than ``values`` values once its aliases are followed.

    Both are about the document as its readers walk it, aliases followed: PyYAML shares an
    aliased node rather than copying it, so the text is small, but validation, an error message
    quoting a value and the review page's copy of the spec walk every copy, and a chain of
    aliases each one list deeper nests as deep as it is long. One walk, without recursion,
    counts each node's expanded size and its levels of lists and mappings once."""
    sizes: dict[int, int] = {}
    levels: dict[int, int] = {}
    open_: set[int] = set()  # nodes whose children are being counted: the walk's path
    seen_under: set[int] = set()  # every node met as a child: one met twice is aliased
    aliased = False
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not children_done and children:
            if id(node) in open_:  # met again below itself: `x: &a [*a]`
                raise UserError(
                    "an alias inside its own anchor stands for a value without end",
                    file=path,
                    field=_where(node.start_mark),
                )
            open_.add(id(node))
            for child in children:
                aliased = aliased or id(child) in seen_under
                seen_under.add(id(child))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        open_.discard(id(node))
        sizes[id(node)] = size = 1 + sum(sizes[id(child)] for child in children)
        levels[id(node)] = isinstance(node, yaml.CollectionNode) + max(
            (levels[id(child)] for child in children), default=0
        )
        if size > values:
            raise UserError(
                f"its aliases stand for more than {values:,} values, the stated limit (an alias of "
                "aliases repeated); write the values out or use fewer aliases"
                if aliased
                else f"it holds more than {values:,} values, the stated limit of one spec",
                file=path,
                field=_where(node.start_mark),
            )
    if levels[id(root)] > depth:
        node = root  # the collection past the limit on the deepest path: `depth` steps down it
        for _ in range(depth):
            node = max(_children(node), key=lambda child: levels[id(child)])
        _refuse_too_deep(path, depth, node.start_mark)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def read(path: str | Path, limit: int, what: str) -> Any:
    """The document in the file at ``path``, at most ``limit`` bytes of UTF-8 (``what`` names
    the kind of file in the error when it is larger)."""
    return parse(read_text_limited(path, limit, what), path)
