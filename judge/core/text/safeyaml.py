r"""YAML text to data, refusing what a safe loader alone lets through: a pure function, no I/O.

``yaml.SafeLoader`` builds no objects from tags, but it still accepts documents that are
hostile or mistaken in other ways. This loader (a ``SafeLoader`` subclass) refuses, while the
document is being composed and before any value is built:

- **alias bombs**: every use of an alias counts the nodes it stands for, and a document
  reaching more than :data:`~judge.core.formats.limits.MAX_ALIAS_NODES` that way is refused at the
  alias that crossed the line (a 555-byte "billion laughs" suite stands for 10^9 nodes);
- **recursive aliases** (``&a [*a]``), which no consumer could walk;
- **nesting** deeper than :data:`~judge.core.formats.limits.MAX_DEPTH`;
- **duplicate keys** in one mapping, naming both lines: PyYAML keeps the last one silently,
  so a second ``deterministic:`` would quietly replace the first. Keys a merge (``<<``)
  brings in may still be overridden, as YAML intends;
- text longer than the caller's limit;
- **YAML 1.1 number surprises**: scalars resolve by YAML 1.2's core schema, not PyYAML's
  1.1 rules, so ``1:30`` stays the string written (1.1 made it 90, base 60), ``017`` is
  seventeen (1.1: octal 15), ``yes``/``no``/``on``/``off`` stay strings (1.1: booleans) and
  ``0o17`` is octal as 1.2 says (1.1: a string). Integers are bounded
  (:data:`~judge.core.formats.limits.MAX_INT_DIGITS`), lone surrogates (``"\\ud800"``) refused, and
  ``1`` and ``'1'`` in one mapping are the same key, as they are once written as JSON.

The rules live in the composer (:class:`_Bounds`), so they hold whichever parser feeds it
events: libyaml's (``yaml.cyaml.CParser``, when PyYAML was built with it: several times
faster on a large suite) or PyYAML's own (the fallback, whose scanner also refuses deep flow
nesting as it scans). Either way nothing is built from a node the rules have not passed.

Every refusal, and every YAML syntax error, is raised as the caller's
:class:`~judge.core.text.errors.ConfigError` subclass naming the source, the line and a fix.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from ..formats.limits import MAX_ALIAS_NODES, MAX_DEPTH
from .errors import ConfigError
from .strict_json import int_problem, string_problem

__all__ = ["load_yaml"]

_MERGE = "tag:yaml.org,2002:merge"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_STR = "tag:yaml.org,2002:str"

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution), first characters
# and patterns: these replace PyYAML's 1.1 bool, int and float resolvers.
_CORE_12: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (_BOOL, "tTfF", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")),
    (_INT, "-+0123456789", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")),
    (_FLOAT, "-+.0123456789", re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")),
)


class _Refused(yaml.YAMLError):
    """A document this loader will not read; carries the place and the fix."""

    def __init__(self, problem: str, mark: Any, fix: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark
        self.fix = fix


_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"
_FLATTEN = "flatten the data; real suites nest a few levels"


def _line(mark: Any) -> int:
    return mark.line + 1 if mark is not None else 0


class _Bounds(Composer):
    """The composer's rules: alias expansion and nesting counted, duplicate keys refused."""

    # Given by the parser and the constructor each loader adds.
    peek_event: Any
    construct_object: Any

    def _init_bounds(self) -> None:
        self._depth = 0
        self._alias_nodes = 0
        self._sizes: dict[Node | None, int] = {}
        self._open_anchors: set[str] = set()

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            return self._alias(event)
        collection = isinstance(event, SequenceStartEvent | MappingStartEvent)
        if collection:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _Refused(_TOO_DEEP, event.start_mark,
                               _FLATTEN)
        anchor = event.anchor
        if anchor is not None:
            self._open_anchors.add(anchor)
        try:
            node = Composer.compose_node(self, parent, index)
        finally:
            if collection:
                self._depth -= 1
            if anchor is not None:
                self._open_anchors.discard(anchor)
        self._sizes[node] = self._size(node)
        return node

    def _alias(self, event: AliasEvent) -> Node | None:
        anchor = event.anchor
        if anchor in self._open_anchors:
            raise _Refused(f"alias *{anchor} refers to the node that contains it",
                           event.start_mark, "a value cannot contain itself; copy it instead")
        node = Composer.compose_node(self, None, None)  # type: ignore[arg-type]  # undefined: raises
        self._alias_nodes += self._sizes.get(node, 1)
        if self._alias_nodes > MAX_ALIAS_NODES:
            raise _Refused(f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes "
                           "(an alias bomb?)", event.start_mark,
                           "write the values out, or share fewer, smaller blocks")
        return node

    def _size(self, node: Node | None) -> int:
        sizes = self._sizes
        if isinstance(node, SequenceNode):
            return 1 + sum(sizes.get(child, 1) for child in node.value)
        if isinstance(node, MappingNode):
            return 1 + sum(sizes.get(k, 1) + sizes.get(v, 1) for k, v in node.value)
        return 1

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        node: MappingNode = Composer.compose_mapping_node(self, anchor)
        seen: dict[Any, Any] = {}
        for key, _ in node.value:
            if not isinstance(key, ScalarNode) or key.tag == _MERGE:
                continue
            try:
                built = self.construct_object(key)
                # 1 and '1' are one key once written as JSON (and mixed types cannot sort).
                ident: Any = str(built) if isinstance(built, (str, int, float)) or built \
                    is None else (key.tag, built)
                hash(ident)
            except (yaml.YAMLError, TypeError):
                ident = (key.tag, key.value)
            if ident in seen:
                raise _Refused(
                    f"duplicate key {key.value!r} at line {_line(key.start_mark)} "
                    f"(first at line {_line(seen[ident])})", key.start_mark,
                    "keep one of them: YAML would silently use the last")
            seen[ident] = key.start_mark
        return node


def _construct_int(loader: Any, node: ScalarNode) -> int:
    """An int by YAML 1.2's core schema: decimal (leading zeros too), ``0o`` octal, ``0x`` hex."""
    text = str(loader.construct_scalar(node))
    why = int_problem(text[2:] if text[:2] in ("0o", "0x") else text)
    if why is not None:
        raise _Refused(why, node.start_mark, "write a smaller number, or quote it as a string")
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _construct_bool(loader: Any, node: ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"


def _construct_str(loader: Any, node: ScalarNode) -> str:
    text = str(loader.construct_scalar(node))
    why = string_problem(text)
    if why is not None:
        raise _Refused(why, node.start_mark,
                       "write the character itself, or a valid surrogate pair")
    return text


def _core_resolvers(timestamps: bool) -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    """PyYAML's implicit resolvers with bool/int/float by YAML 1.2 (and no timestamps if asked)."""
    replaced = {tag for tag, _, _ in _CORE_12}
    if not timestamps:
        replaced.add(_TIMESTAMP)
    table: dict[Any, list[tuple[str, re.Pattern[str]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in replaced]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    for tag, firsts, regexp in _CORE_12:
        for first in firsts:
            table.setdefault(first, []).append((tag, regexp))
    return table


def _use_core_schema(loader: Any, *, timestamps: bool) -> None:
    loader.yaml_implicit_resolvers = _core_resolvers(timestamps)
    loader.add_constructor(_INT, _construct_int)
    loader.add_constructor(_BOOL, _construct_bool)
    loader.add_constructor(_STR, _construct_str)


class _BoundedLoader(_Bounds, yaml.SafeLoader):
    """``SafeLoader`` (PyYAML's own parser) with the rules of :class:`_Bounds`."""

    def __init__(self, stream: str) -> None:
        yaml.SafeLoader.__init__(self, stream)
        self._init_bounds()

    # The scanner's simple-key bookkeeping is quadratic in flow nesting ("[[[[..."), so
    # flow depth is refused as it is scanned, long before the composer would see it.
    def fetch_flow_sequence_start(self) -> None:
        self._check_flow_level()
        super().fetch_flow_sequence_start()

    def fetch_flow_mapping_start(self) -> None:
        self._check_flow_level()
        super().fetch_flow_mapping_start()

    def _check_flow_level(self) -> None:
        if self.flow_level >= MAX_DEPTH:
            raise _Refused(_TOO_DEEP,
                           self.get_mark(),
                           _FLATTEN)


class _BoundedTextLoader(_BoundedLoader):
    """:class:`_BoundedLoader` without the timestamp rule: times stay the strings written."""


_use_core_schema(_BoundedLoader, timestamps=True)
_use_core_schema(_BoundedTextLoader, timestamps=False)
_Loader = type[_BoundedLoader] | type["_CBoundedLoader"]
_LOADERS: tuple[_Loader, _Loader] = (_BoundedLoader, _BoundedTextLoader)

if getattr(yaml, "__with_libyaml__", False):
    from yaml.cyaml import CParser  # type: ignore[attr-defined]

    class _CBoundedLoader(_Bounds, CParser, SafeConstructor, Resolver):
        """libyaml's parser feeding the composer of :class:`_Bounds`, then the safe constructor.

        libyaml's own C composer, which knows none of the rules, is never used.
        """

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._init_bounds()

        def get_single_data(self) -> Any:
            node = self.get_single_node()
            return None if node is None else self.construct_document(node)

    class _CBoundedTextLoader(_CBoundedLoader):
        """:class:`_CBoundedLoader` without the timestamp rule."""

    _use_core_schema(_CBoundedLoader, timestamps=True)
    _use_core_schema(_CBoundedTextLoader, timestamps=False)
    _LOADERS = (_CBoundedLoader, _CBoundedTextLoader)


def load_yaml(text: str, source: str, error: type[ConfigError], *, max_chars: int,
              timestamps: bool = True) -> Any:
    """The data of one YAML document, or ``error`` naming ``source``, the line and a fix.

    ``timestamps=False`` keeps ``2025-03-03T16:00:00Z`` a string (suite evidence).
    """
    if len(text) > max_chars:
        raise error(f"file too large: {len(text):,} characters, the limit is {max_chars:,}",
                    file=source, fix="split it into smaller files")
    loader = _LOADERS[0 if timestamps else 1](text)
    try:
        return loader.get_single_data()
    except _Refused as exc:
        raise error(exc.problem, file=source, where=_where(exc.problem_mark),
                    fix=exc.fix) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "maximum nesting depth" in problem:  # libyaml's own bound (1,000) met first
            raise error(_TOO_DEEP, file=source, where=_where(mark), fix=_FLATTEN) from None
        raise error(f"invalid YAML: {problem}", file=source, where=_where(mark),
                    fix="check the indentation and quoting near that line") from None
    finally:
        loader.dispose()


def _where(mark: Any) -> str | None:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None
