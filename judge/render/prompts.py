r"""Judge prompts: Jinja templates rendered, sandboxed, into the chat messages sent to a judge.

The one module that imports jinja2. A template id (``judge``) names ``prompts/<id>.md.j2``,
looked up in the workspace's ``prompts/`` folder first, then in the shipped one; templates
it includes, imports or extends are looked up the same way.

**Two messages, one file.** A template defines two block-set variables,
``{% set system %}...{% endset %}`` and ``{% set user %}...{% endset %}``, read through
:meth:`jinja2.Template.make_module`; whatever it renders outside them is discarded, and each
message is stripped of leading and trailing whitespace. Chosen over splitting one rendered
text on a marker line: an in-band marker is a thing untrusted text could forge, a variable
is not.

**Context** a template receives (plain frozen values, built here, never pydantic models):

- ``rubric``: ``id``, ``title``, ``description``, ``style`` (``scores``/``levels``),
  ``levels`` (names, best first), ``categories`` (``id``, ``definition``, ``weight``,
  ``anchors``: a ``(level, text)`` pair for every level, in level order, text empty when
  the rubric gives none); trusted configuration.
- ``task`` (the case input) and ``output`` (the judged output, as text); untrusted.
- ``conversation``: the case's turns as bounded by :mod:`judge.core.formats.conversation` (empty
  when it has none), each with ``id`` (``turn:N``, trusted), ``role``, ``label`` and
  ``text`` (untrusted) and ``gap_after`` (the cap's dropped turns follow this one);
  ``conversation_notice``: what the cap dropped, in words, or none.
- ``groups``: the bundle's groups in its canonical order, each with ``name``, ``notice``
  (what the cap dropped, or none) and ``items`` (``id``, ``title``, ``excerpt``, ``refs``:
  ``(key, value)`` pairs); every string of an item is untrusted.

- ``examples``: cases the people labelled, shown as examples when the rubric opts in
  (``examples:``; :mod:`judge.core.formats.label_examples` picks them from the training folds
  only), empty otherwise; each with ``task`` and ``output`` (untrusted) and ``scores``:
  ``(category, score, band)`` triples, or ``(category, score, level)`` for a level rubric
  (trusted: rubric names and integers). The ``judge-examples`` template shows them through
  the ``examples.md.j2`` partial, fenced like evidence.

**Pairwise context** (:meth:`PromptRenderer.render_pair`, template ``pairwise``): ``task``,
``response_1`` and ``response_2`` (the two responses in the order shown; untrusted),
``criteria`` (lines of the suite's criteria; trusted configuration) and ``groups`` (as above,
empty when the pair has no evidence).

**Untrusted text.** Case data reaches a template only as context values, never as template
source (no ``from_string`` on data), so it is never evaluated. It may still try to *read* as
prompt structure: open a heading, close a fence, pose as instructions. Templates print it
only through two filters: ``fence`` (multi-line text in a backtick fence longer than any
backtick run inside, every line indented two spaces) and ``oneline`` (all whitespace,
newlines included, collapsed to single spaces). Untrusted values reach a template as
:class:`Untrusted`, which is *not* a ``str``: it has no string methods, no attributes, no
items, no iteration, no arithmetic, comparison or conversion (``str``, ``repr``, ``format``,
``int``...), so every path but the two filters (``|trim``, ``|e``, ``|safe``, ``~``,
``|format``, ``|join``, ``|tojson``, ``.attr``, ``[i]``, ``{% for %}``...) fails at render
time with the template's file and line. Only truth (``{% if task %}``) is allowed. A type,
not a list of banned filters: a filter Jinja adds tomorrow meets the same wall. Both filters
also replace control characters, which ``judge render`` would otherwise send to a terminal.

**Quoted text is final.** What ``|fence`` and ``|oneline`` return is :class:`Quoted`, not a
``str``: it prints as it is and nothing else (``{{ task|fence|replace('\n  ', '\n') }}``
used to put case text back at column 0, ``'x' in task|oneline`` to branch on it). A block,
macro or filter block whose output holds quoted text is itself :class:`Quoted` (the
environment's ``concat`` sees to it), so capturing the text first is no way around.

**Where templates come from, and how long they may run.** A template resolves only inside
the workspace's ``prompts/`` and the shipped folder: a symlink (or ``..``) that leads
elsewhere, and a folder where a template file should be, are refused. Every template,
shipped or a workspace's, renders in the same sandbox and under a budget
(:data:`RENDER_SECONDS` of wall time, checked at every loop step of ``range``, call,
filter and output; :data:`MAX_PROMPT_CHARS` of text, checked before a string is built by
``*``/``+`` or joined): nested ``range(100000)`` loops and a 400 MB
string end as a TemplateError (exit 2) naming the template, not a hang.

**Hash.** ``template_hash`` is the sha256 of canonical JSON of the root id and the name and
source of every template reachable from it; the sources are read once, at construction, and
rendering uses exactly that snapshot, so the hash always describes what was rendered.
"""

from __future__ import annotations

import copy
import functools
import json
import operator
import os
import posixpath
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import Any, final

import jinja2
from jinja2 import meta
from jinja2.bccache import Bucket
from jinja2.loaders import split_template_path
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range

from ..core.formats.conversation import ConversationView, bound_conversation
from ..core.formats.evidence import EvidenceBundle, structured_text
from ..core.formats.limits import MAX_PROMPT_CHARS, MAX_TEMPLATE_CHARS
from ..core.formats.rubric import Rubric
from ..core.formats.suite import Case, HumanLabel
from ..core.scoring.check_signals import output_text
from ..core.scoring.scoring import band_for
from ..core.text.canonical import sha256_hex
from ..core.text.errors import TemplateError
from ..system.input_files import read_input
from ..system.resources import shipped_dir

__all__ = [
    "CONVERSATION_PARTIAL",
    "EVIDENCE_PARTIAL",
    "RENDERER_VERSION",
    "RENDER_SECONDS",
    "TEMPLATE_SUFFIX",
    "ExampleView",
    "PromptRenderer",
    "Quoted",
    "RenderedPrompt",
    "Untrusted",
    "fence",
    "input_text",
    "oneline",
]

TEMPLATE_SUFFIX = ".md.j2"
RENDERER_VERSION = f"jinja2 {jinja2.__version__}"
"""What renders prompts besides our code (part of a replay fingerprint: ``judge.engine.replay``)."""
MESSAGE_ROLES = ("system", "user")
_TEMPLATE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_BACKTICKS = re.compile(r"`+")
# C0/C1 controls other than tab and the line breaks handled by splitting: an ESC in an
# excerpt would otherwise drive the terminal that `judge render` prints to.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_RUBRIC_CACHE_SIZE = 32

RENDER_SECONDS = 10.0
"""Wall time a template may take to render one case (a render measured about a millisecond)."""


class _UntrustedUse(jinja2.TemplateRuntimeError):
    """Untrusted text was used other than through ``|fence`` or ``|oneline``."""


def _refuse(what: str) -> _UntrustedUse:
    return _UntrustedUse(f"untrusted case text used {what}; only |fence and |oneline may "
                         "turn it into text")


class _Sealed:
    """Text that templates may hold, test for truth and hand to a filter, and nothing else.

    The one home of the refusals :class:`Untrusted` and :class:`Quoted` share: every
    conversion (``str``, ``repr``, format, numbers), comparison, measure and iteration raises
    the class's :attr:`_refusal`, so no filter or operator can reach the text. Truth is
    allowed (``{% if task %}``). Deliberately not a ``str`` subclass.
    """

    __slots__ = ("__text",)
    _AS_STRING = "as a string"

    def __init__(self, text: str) -> None:
        self.__text = text

    def _refusal(self, what: str) -> _UntrustedUse:
        raise NotImplementedError

    def __bool__(self) -> bool:
        return bool(self.__text)

    def __str__(self) -> str:
        raise self._refusal(self._AS_STRING)

    def __repr__(self) -> str:
        raise self._refusal("as a string (repr, |pprint, or inside a list or mapping)")

    def __format__(self, spec: str) -> str:
        raise self._refusal("in a format string")

    # Numbers: |int and |float would otherwise turn a TypeError into a silent 0.
    def __int__(self) -> int:
        raise self._refusal("as a number")

    def __float__(self) -> float:
        raise self._refusal("as a number")

    def __index__(self) -> int:
        raise self._refusal("as a number")

    def __len__(self) -> int:
        raise self._refusal("to measure it (|length, |count)")

    def __iter__(self) -> Iterator[str]:
        raise self._refusal("as a sequence (in, |list, |first, for)")

    def __contains__(self, item: object) -> bool:
        raise self._refusal("in a test ('x' in ...)")

    # Comparisons: a template must not branch on what the case says.
    def __eq__(self, other: object) -> bool:
        raise self._refusal("in a comparison")

    def __ne__(self, other: object) -> bool:
        raise self._refusal("in a comparison")

    def __lt__(self, other: object) -> bool:
        raise self._refusal("in a comparison")

    def __le__(self, other: object) -> bool:
        raise self._refusal("in a comparison")

    def __gt__(self, other: object) -> bool:
        raise self._refusal("in a comparison")

    def __ge__(self, other: object) -> bool:
        raise self._refusal("in a comparison")

    __hash__ = object.__hash__


@final
class Untrusted(_Sealed):
    """Text from a case (input, output, evidence): data to quote, never to print bare.

    The only ways to text are :func:`fence` and :func:`oneline` (:class:`_Sealed`).
    """

    __slots__ = ()
    _AS_STRING = "as a string (printed bare, |string, |trim, |e, |safe, ~, join...)"

    def _refusal(self, what: str) -> _UntrustedUse:
        return _refuse(what)


@final
class Quoted(_Sealed):
    """Text that :func:`fence` or :func:`oneline` made of case text, or a block holding it.

    Printed as it is (``{{ task|fence }}``) and nothing else: like :class:`Untrusted`, every
    conversion, comparison and operation raises (:class:`_Sealed`), so no filter can undo
    the quoting.
    """

    __slots__ = ()
    _AS_STRING = "by a filter or an operator (|replace, |trim, ~, join...)"

    def _refusal(self, what: str) -> _UntrustedUse:
        return _UntrustedUse(f"quoted case text (the output of |fence or |oneline) used "
                             f"{what}; it may only be printed as it is")


class _QuotedText(str):
    """A :class:`Quoted` value as printed into a template's output buffer.

    A ``str`` (the buffer is joined as text) that survives the generated code's ``str()``
    unchanged, so :func:`_concat` can tell a buffer that holds quoted text.
    """

    __slots__ = ()

    def __str__(self) -> str:
        return self


_sealed_text: Callable[[_Sealed], str] = operator.attrgetter("_Sealed__text")
_untrusted_text: Callable[[Untrusted], str] = _sealed_text
_quoted_text: Callable[[Quoted], str] = _sealed_text


def _text(value: object) -> str:
    if type(value) is Untrusted:
        return _untrusted_text(value)
    return value if isinstance(value, str) else str(value)


def oneline(value: object) -> str:
    """``value`` on one line: every run of whitespace (newlines included) becomes one space."""
    text = " ".join(_text(value).split())
    # Every character _CONTROL matches is unprintable: a printable text has none to replace
    # (the re.sub measured a tenth of a render).
    return text if text.isprintable() else _CONTROL.sub("\ufffd", text)


def _oneline_filter(value: object) -> Quoted:
    """The ``|oneline`` filter: :func:`oneline`, as a final :class:`Quoted` value."""
    return Quoted(oneline(value))


def _fence_filter(value: object) -> Quoted:
    """The ``|fence`` filter: :func:`fence`, as a final :class:`Quoted` value."""
    return Quoted(fence(value))


def fence(value: object) -> str:
    r"""``value`` as a backtick fence no line of it can close or escape.

    The fence is longer than the longest backtick run inside (at least 3), so no content
    line can close it; every content line is indented two spaces, so none can start with
    ``#`` or sit at the margin as prompt structure. Every Unicode line break (``\r``,
    U+2028...) counts as one, since a model's tokenizer may read it as one.
    """
    text = _text(value)
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    bar = "`" * max(3, longest + 1)
    lines = text.splitlines()
    if _CONTROL.search(text) is not None:  # a control character to replace on some line
        lines = [_CONTROL.sub("\ufffd", line) for line in lines]
    body = "\n".join(["  " + line for line in lines])
    return f"{bar}\n{body}\n{bar}" if body else f"{bar}\n{bar}"


def _finalize(value: object) -> object:
    # Runs on every {{ ... }} output, for the clearest message in the commonest case; the
    # type itself refuses every other conversion.
    kind = type(value)
    if kind is Quoted:
        text = _quoted_text(value)  # type: ignore[arg-type]
        _spend(len(text))
        return _QuotedText(text)
    if kind is Untrusted:
        raise _UntrustedUse(
            f"untrusted case text printed without |fence or |oneline: "
            f"{oneline(value)[:40]!r}")
    return value


def _concat(parts: Iterable[str]) -> str | Quoted:
    """Join a block's output; a block that printed quoted text stays :class:`Quoted`."""
    pieces = parts if isinstance(parts, list) else list(parts)
    budget = _BUDGET.get()
    if budget is not None:
        budget.check_size(sum(map(len, pieces)))
    text = "".join(pieces)
    if any(type(p) is _QuotedText for p in pieces):
        return Quoted(text)
    return text


class _Budget:
    """What one render of a workspace template may still spend: a deadline and characters."""

    __slots__ = ("deadline", "ticks")

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.ticks = 0

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise _OverBudget(f"rendering took longer than {RENDER_SECONDS:g} s (a loop that "
                              "does not end, or one far too large?)")

    def tick(self) -> None:
        """One loop step: the clock is read every 1,024 of them."""
        self.ticks += 1
        if not self.ticks & 1023:
            self.check_time()

    @staticmethod
    def check_size(chars: int) -> None:
        if chars > MAX_PROMPT_CHARS:
            raise _OverBudget(f"the template builds {chars:,} characters of text; the limit "
                              f"is {MAX_PROMPT_CHARS:,}")


class _OverBudget(jinja2.TemplateRuntimeError):
    """A workspace template ran past its render budget (time or size)."""


_BUDGET: ContextVar[_Budget | None] = ContextVar("judge_render_budget", default=None)


def _spend(chars: int) -> None:
    budget = _BUDGET.get()
    if budget is not None:
        budget.check_size(chars)
        budget.check_time()


def _budgeted_range(*args: int) -> Iterator[int]:
    """The sandbox's ``range`` (at most 100,000 items), a loop step of the budget each."""
    numbers = safe_range(*args)
    budget = _BUDGET.get()
    if budget is None:
        yield from numbers
        return
    for number in numbers:
        budget.tick()
        yield number


def _sized(value: Any) -> Any:
    if isinstance(value, (str, list, tuple)):
        _spend(len(value))
    return value


def _budgeted_filter(filter_func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(filter_func)  # keeps jinja's pass_context / pass_environment marks
    def checked(*args: Any, **kwargs: Any) -> Any:
        return _sized(filter_func(*args, **kwargs))
    return checked


def _opaque_getattr(base: Callable[..., Any]) -> Callable[..., Any]:
    def getattr(self: jinja2.Environment, obj: Any, attribute: str) -> Any:
        if isinstance(obj, _Sealed):
            raise obj._refusal(f"with an attribute ({attribute!r})")
        return base(self, obj, attribute)
    return getattr


def _opaque_getitem(base: Callable[..., Any]) -> Callable[..., Any]:
    def getitem(self: jinja2.Environment, obj: Any, argument: Any) -> Any:
        if isinstance(obj, _Sealed):
            raise obj._refusal("with an index or key")
        return base(self, obj, argument)
    return getitem


_VIEW_FIELDS: dict[type, frozenset[str]] = {}
"""The fields of the renderer's own context views (filled below their definitions), and
the counters of Jinja's ``loop``: attributes that hold plain values only."""


def _view_getattr(base: Callable[..., Any]) -> Callable[..., Any]:
    """``view.field`` of one of the renderer's own views (or a ``loop`` counter), read directly.

    A field of those views holds a str, a number, a tuple or another view, never a method
    nor a mutable container, so the sandbox's own check (``is_safe_attribute``: internal
    names, ``str.format``, mutating methods) can only allow it; the sandbox still sees every
    other attribute, every call and every operator. Measured: most of a shipped render's cost
    was that check (1.26-1.77 ms a render with it, 0.89-1.46 without).
    """
    def getattr(self: jinja2.Environment, obj: Any, attribute: str) -> Any:
        known = _VIEW_FIELDS.get(type(obj))
        if known is not None and attribute in known:
            return object.__getattribute__(obj, attribute)
        return base(self, obj, attribute)
    return getattr


# Jinja routes ``x.name``, ``x[key]``, ``|attr``, ``|map(attribute=)``, ``|sort(attribute=)``...
# through ``getattr``/``getitem``: both refuse untrusted text. Each wraps its base method
# directly (no super() per access: this is the render hot path).
class _SandboxedEnvironment(ImmutableSandboxedEnvironment):
    """The environment of every template: opaque values, and a render budget."""

    getattr = _view_getattr(_opaque_getattr(ImmutableSandboxedEnvironment.getattr))
    getitem = _opaque_getitem(ImmutableSandboxedEnvironment.getitem)
    intercepted_binops = frozenset({"*", "**", "+"})

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any,
                   right: Any) -> Any:
        """``*``, ``**`` and ``+`` with the size of their result checked *before* it is built."""
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(times, int):
                    _spend(len(seq) * max(times, 0))
        elif operator == "**" and isinstance(right, int) and abs(right) > 4096:
            raise _OverBudget(f"exponent {right:,} is too large for a template")
        elif operator == "+" and isinstance(left, (str, list, tuple)) \
                and isinstance(right, (str, list, tuple)):
            _spend(len(left) + len(right))
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any,
             *args: Any, **kwargs: Any) -> Any:
        """Every call a template makes: the clock is checked, and the size of the result."""
        _spend(0)
        return _sized(super().call(__context, __obj, *args, **kwargs))


@dataclass(frozen=True)
class RenderedPrompt:
    """The messages for one case and the template they came from."""

    messages: tuple[dict[str, str], ...]
    """``({"role": "system", "content": ...}, {"role": "user", "content": ...})``."""
    template_id: str
    """Template id, e.g. ``judge``."""
    template_hash: str
    """sha256 over the sources of the template and everything it includes."""


@dataclass(frozen=True, slots=True)
class ExampleView:
    """A labelled case shown to the judge as an example: its text and the people's scores."""

    id: str
    """The case id (not shown by the shipped partial; a case id is case data)."""
    task: Untrusted
    output: Untrusted
    scores: tuple[tuple[str, int, str], ...]
    """``(category, people's score, band or level name)`` in rubric order."""

    @classmethod
    def of(cls, case: Case, human: HumanLabel, rubric: Rubric) -> ExampleView:
        """The example of ``case`` with the people's label ``human``, read on ``rubric``."""
        scores = []
        for cat in rubric.categories:
            score = human.categories.get(cat.id)
            if score is None:
                continue
            if rubric.style == "levels":  # the rubric's level nearest the people's score
                name = min(rubric.levels, key=lambda lv: (abs(lv.value * 100 - score),
                                                          -lv.value)).name
            else:
                name = band_for(score, rubric.bands)
            scores.append((cat.id, score, name))
        return cls(id=case.id, task=Untrusted(input_text(case.input)),
                   output=Untrusted(output_text(case.output)), scores=tuple(scores))


@dataclass(frozen=True, slots=True)
class _CategoryView:
    id: str
    definition: str
    weight: float
    anchors: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class _RubricView:
    id: str
    title: str
    description: str
    style: str
    levels: tuple[str, ...]
    categories: tuple[_CategoryView, ...]


@dataclass(frozen=True, slots=True)
class _ItemView:
    id: Untrusted
    title: Untrusted
    excerpt: Untrusted
    refs: tuple[tuple[Untrusted, Untrusted], ...]


@dataclass(frozen=True, slots=True)
class _GroupView:
    name: str
    notice: str | None
    items: tuple[_ItemView, ...]


def _rubric_view(rubric: Rubric) -> _RubricView:
    levels = tuple(lv.name for lv in rubric.levels)
    cats = tuple(
        _CategoryView(id=c.id, definition=c.definition, weight=c.weight,
                      anchors=tuple((n, c.anchors.get(n, "")) for n in levels))
        for c in rubric.categories)
    return _RubricView(id=rubric.id, title=rubric.title or rubric.id,
                       description=rubric.description, style=rubric.style, levels=levels,
                       categories=cats)


def _ref_text(value: object) -> str:
    if value is None or isinstance(value, bool):
        return structured_text(value)
    return _text(value)


def _groups_view(bundle: EvidenceBundle) -> tuple[_GroupView, ...]:
    # Lists, not generators, inside tuple(): this runs for every ref of every item of every
    # render, and most refs are text already.
    return tuple([
        _GroupView(g.name, g.notice(), tuple([
            _ItemView(Untrusted(it.id), Untrusted(it.title), Untrusted(it.excerpt),
                      tuple([(Untrusted(k), Untrusted(v if type(v) is str else _ref_text(v)))
                             for k, v in it.refs.items()]))
            for it in g.items]))
        for g in bundle.groups])


@dataclass(frozen=True, slots=True)
class _TurnView:
    id: str
    role: str
    label: Untrusted
    text: Untrusted
    gap_after: bool


def _conversation_view(view: ConversationView) -> tuple[_TurnView, ...]:
    return tuple(_TurnView(id=t.id, role=t.role, label=Untrusted(t.label),
                           text=Untrusted(t.text), gap_after=i == view.gap_after)
                 for i, t in enumerate(view.turns))


_VIEW_FIELDS.update({kind: frozenset(f.name for f in fields(kind)) for kind in (
    ExampleView, _CategoryView, _RubricView, _ItemView, _GroupView, _TurnView)})
# ``loop.last`` and its kin: Jinja's loop counters, ints and bools (not ``previtem``/``cycle``).
_VIEW_FIELDS[jinja2.runtime.LoopContext] = frozenset(
    {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth",
     "depth0"})

EVIDENCE_PARTIAL = "evidence.md.j2"
CONVERSATION_PARTIAL = "conversation.md.j2"
def input_text(value: Any) -> str:
    """A case's input as the prompt quotes it: a string as is, else indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _conversation_context(case: Case) -> tuple[tuple[_TurnView, ...], str | None]:
    """The template's ``conversation`` (its turns as views) and ``conversation_notice``."""
    if not case.conversation:
        return (), None
    view = bound_conversation(case.conversation)
    return _conversation_view(view), view.notice()


class _SnapshotLoader(jinja2.BaseLoader):
    """Serves the sources read at construction: rendering never touches the disk again."""

    def __init__(self, sources: Mapping[str, tuple[str, str]]) -> None:
        self._sources = dict(sources)

    def get_source(self, environment: jinja2.Environment,
                   template: str) -> tuple[str, str | None, Callable[[], bool] | None]:
        if not isinstance(template, str):
            raise _refuse("as a template name")
        if template not in self._sources:
            raise jinja2.TemplateNotFound(template)
        source, filename = self._sources[template]
        return source, filename, lambda: True

    def list_templates(self) -> list[str]:
        return sorted(self._sources)


class _CompiledTemplates(jinja2.BytecodeCache):
    """Compiled template code kept in memory, by template file and source checksum.

    A process that opens many renderers (``judge workspace serve``, the pytest plugin, repeated runs
    in one process) compiles each template source once instead of once per renderer.
    """

    def __init__(self, size: int = 128) -> None:
        self._size = size
        self._code: dict[tuple[str, str], Any] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self._code.get((bucket.key, bucket.checksum))
        if code is not None:
            bucket.code = code

    def dump_bytecode(self, bucket: Bucket) -> None:
        if len(self._code) >= self._size:
            del self._code[next(iter(self._code))]
        self._code[(bucket.key, bucket.checksum)] = bucket.code


_COMPILED = _CompiledTemplates()


@lru_cache(maxsize=128)
def _referenced(source: str, name: str, filename: str) -> tuple[str | None, ...]:
    """The templates a source loads, parsed once per source.

    ``None`` stands for a name computed at render time. Raises ``TemplateSyntaxError``.
    """
    return tuple(meta.find_referenced_templates(_PARSER.parse(source, name, filename)))


def _environment() -> jinja2.Environment:
    # Immutable sandbox: the per-rubric context is cached and shared across renders, so a
    # template must not be able to mutate it (list.append from a template is refused).
    # Every template renders in it, shipped or a workspace's: one environment, one path, so
    # what the tests check of a shipped template is what a workspace copy of it does.
    # The sandbox guards against a workspace's *templates*; data is never template code.
    env = _SandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
        cache_size=-1,
        finalize=_finalize,
        bytecode_cache=_COMPILED,
    )
    env.filters = {name: _budgeted_filter(f) for name, f in env.filters.items()}
    # Not wrapped: what they return is Quoted, which the wrapper's size check never counts
    # (``_sized`` measures str, list and tuple); printed, ``_finalize`` counts it.
    env.filters["fence"] = _fence_filter
    env.filters["oneline"] = _oneline_filter
    env.globals["range"] = _budgeted_range
    env.concat = _concat  # type: ignore[method-assign,assignment]
    return env


_PARSER = _environment()


def _message(exc: Exception) -> str:
    # An exception's args may hold untrusted text (which refuses str): never crash on it.
    try:
        return str(exc)
    except _UntrustedUse:
        return "(an argument held untrusted case text)"


def _template_file(template: str) -> str:
    if template.endswith(".j2"):
        return template
    return template + TEMPLATE_SUFFIX


class PromptRenderer:
    """Loads a template once (with everything it includes) and renders it per case."""

    def __init__(self, template: str = "judge", workspace: Path | None = None) -> None:
        name = _template_file(template)
        if not _TEMPLATE_ID.match(name):
            raise TemplateError(f"invalid template id {template!r}",
                                fix="use a file name from prompts/, e.g. judge")
        self.template_id: str = name.removesuffix(TEMPLATE_SUFFIX)
        dirs = ([workspace / "prompts"] if workspace is not None else []) + [shipped_dir("prompts")]
        self._dirs = tuple(dirs)
        self._env = _environment()
        sources = self._read_closure(name)
        self.source_text: str = "\n".join(src for src, _ in sources.values())
        """The templates' own text (trusted): what a rationale must not merely repeat."""
        self.template_hash: str = sha256_hex(
            {"root": name, "templates": {n: src for n, (src, _) in sources.items()}})
        self._env.loader = _SnapshotLoader(sources)
        self._by_file: dict[str, jinja2.Template] = {}
        for tname, (_, filename) in sources.items():
            try:
                self._by_file[filename] = self._env.get_template(tname)
            except jinja2.TemplateSyntaxError as exc:
                raise self._syntax_error(exc) from None
        self._root = self._env.get_template(name)
        self._rubrics: dict[int, tuple[Rubric, _RubricView]] = {}
        self._sources = sources
        self._examples: Mapping[str, tuple[ExampleView, ...]] = {}

    @property
    def shows_examples(self) -> bool:
        """Whether a template of this renderer reads the ``examples`` context value."""
        return any("examples" in meta.find_undeclared_variables(self._env.parse(src))
                   for src, _ in self._sources.values())

    def with_examples(self, by_case: Mapping[str, Sequence[ExampleView]]) -> PromptRenderer:
        """A renderer that shows each case id's labelled examples (the same templates)."""
        other = copy.copy(self)
        other._examples = {k: tuple(v) for k, v in by_case.items()}
        return other

    def _read_closure(self, root: str) -> dict[str, tuple[str, str]]:
        # The hash must cover every template a render can load. Names written literally are
        # followed; a name computed at render time cannot be, so then every template in the
        # search path is read (and hashed) instead.
        sources: dict[str, tuple[str, str]] = {}
        pending: list[tuple[str, str | None]] = [(root, None)]
        everything = False
        while pending:
            name, parent = pending.pop()
            if name in sources:
                continue
            sources[name] = self._read(name, parent)
            source, filename = sources[name]
            try:
                refs = _referenced(source, name, filename)
            except jinja2.TemplateSyntaxError as exc:
                raise self._syntax_error(exc) from None
            for ref in refs:
                if ref is not None:
                    pending.append((ref, filename))
                elif not everything:
                    everything = True
                    pending.extend((n, filename) for n in jinja2.FileSystemLoader(
                        self._dirs).list_templates() if n.endswith(".j2"))
        return sources

    def _read(self, name: str, parent: str | None) -> tuple[str, str]:
        """The source of template ``name`` and its file: the first folder that has it.

        Read through the one bounded reader (:mod:`judge.system.input_files`): a FIFO or a
        device where a template should be is refused by type, never opened for reading
        (a FIFO would block the run, ``/dev/zero`` never ends); so is a folder. Either is
        an error rather than a fall back to the shipped template of that name.
        """
        try:
            pieces: list[str] = split_template_path(name)  # no '..': never out of its folder
        except jinja2.TemplateNotFound:
            pieces = []
        for folder in self._dirs if pieces else ():
            candidate = Path(os.path.normpath(posixpath.join(folder, *pieces)))
            if not candidate.exists():
                continue
            if candidate.is_dir():
                raise TemplateError(f"{candidate} is a folder, not a template", file=parent,
                                    fix=f"remove or rename the folder; a template is a file "
                                        f"{name}")
            self._inside_folders(name, str(candidate), parent)
            return read_input(candidate, TemplateError, 4 * MAX_TEMPLATE_CHARS), str(candidate)
        looked = ", ".join(str(d) for d in self._dirs)
        raise TemplateError(
            f"template {name!r} not found (looked in {looked})", file=parent,
            fix=f"create prompts/{name} in the workspace, or correct the name"
            + ("" if parent is None else " in the include"))

    def _inside_folders(self, name: str, filename: str, parent: str | None) -> None:
        """Refuse a template whose file, links followed, is outside every template folder."""
        real = Path(filename).resolve()
        if not any(real.is_relative_to(folder.resolve()) for folder in self._dirs):
            raise TemplateError(
                f"template {name!r} resolves to {real}, outside the template folders "
                "(a symlink or '..' leading out)", file=parent or filename,
                fix="templates must be files inside the workspace's prompts/ folder (or "
                    "the shipped ones); copy the file in instead of linking it")

    def _syntax_error(self, exc: jinja2.TemplateSyntaxError) -> TemplateError:
        return TemplateError(
            f"template syntax error: {exc.message}", file=exc.filename or exc.name,
            where=f"line {exc.lineno}",
            fix="check the Jinja tags near that line ({% ... %}, {{ ... }}, {# ... #})")

    def _locate(self, tb: TracebackType | None) -> tuple[str | None, int | None]:
        # make_module does not rewrite tracebacks to template lines, so the innermost frame
        # of a compiled template is found here and mapped back through its debug info.
        found: tuple[str | None, int | None] = (None, None)
        while tb is not None:
            template = self._by_file.get(tb.tb_frame.f_code.co_filename)
            if template is not None:
                found = (template.filename, template.get_corresponding_lineno(tb.tb_lineno))
            tb = tb.tb_next
        return found

    def _render_error(self, exc: Exception) -> TemplateError:
        file, line = self._locate(exc.__traceback__)
        file = file or self._root.filename
        where = f"line {line}" if line else None
        if isinstance(exc, jinja2.exceptions.SecurityError):
            return TemplateError(f"unsafe operation refused by the sandbox: {exc}", file=file,
                                 where=where, fix="templates may not use _private attributes "
                                 "or unsafe methods; use the context values documented in "
                                 "judge/render/prompts.py")
        if isinstance(exc, jinja2.UndefinedError):
            return TemplateError(f"undefined variable: {exc.message}", file=file, where=where,
                                 fix="use the context the renderer provides: rubric, task, "
                                 "output, groups (see judge/render/prompts.py)")
        if isinstance(exc, _UntrustedUse):
            quoted = str(exc).startswith("quoted")
            return TemplateError(str(exc), file=file, where=where,
                                 fix="print {{ value|fence }} or {{ value|oneline }} as it is, "
                                 "with no filter or operator after it" if quoted else
                                 "print case text as {{ value|fence }} or "
                                 "{{ value|oneline }}")
        return TemplateError(f"rendering failed: {type(exc).__name__}: {_message(exc)}",
                             file=file, where=where, fix="correct the template near that line")

    def _rubric_context(self, rubric: Rubric) -> _RubricView:
        cached = self._rubrics.get(id(rubric))
        if cached is None or cached[0] is not rubric:
            if len(self._rubrics) >= _RUBRIC_CACHE_SIZE:
                self._rubrics.clear()
            cached = (rubric, _rubric_view(rubric))
            self._rubrics[id(rubric)] = cached
        return cached[1]

    def render(self, rubric: Rubric, case: Case, bundle: EvidenceBundle) -> RenderedPrompt:
        """Render the system and user messages for one case."""
        context: dict[str, Any] = {
            "rubric": self._rubric_context(rubric),
            "task": Untrusted(input_text(case.input)),
            "output": Untrusted(output_text(case.output)),
            "examples": self._examples.get(case.id, ()),
        }
        context["conversation"], context["conversation_notice"] = _conversation_context(case)
        context["groups"] = _groups_view(bundle)
        return self._render_context(context)

    def render_pair(self, task: Any, first: Any, second: Any, *,
                    bundle: EvidenceBundle | None = None,
                    criteria: Sequence[str] = ()) -> RenderedPrompt:
        """Render the messages that show two responses to one task (pairwise judging).

        ``first`` is shown as Response 1 and ``second`` as Response 2: the caller swaps them
        to judge the other order. Responses are read like a case output (text, or a
        mapping's ``text``/``content``...), the task like a case input.
        """
        context = {
            "task": Untrusted(input_text(task)),
            "response_1": Untrusted(output_text(first)),
            "response_2": Untrusted(output_text(second)),
            "criteria": tuple(_text(c) for c in criteria),
            "groups": _groups_view(bundle) if bundle is not None else (),
        }
        return self._render_context(context)

    def _render_context(self, context: Mapping[str, Any]) -> RenderedPrompt:
        # Any failure inside a template is that template's error: a configuration error
        # naming its file and line, never a crash of the run.
        token = _BUDGET.set(_Budget(RENDER_SECONDS))
        try:
            module = self._root.make_module(dict(context))
        except _OverBudget as exc:
            line = self._locate(exc.__traceback__)[1]
            raise TemplateError(str(exc), file=self._root.filename,
                                where=f"line {line}" if line else None,
                                fix="bound the template's loops and the text it builds; a "
                                    "prompt renders in milliseconds") from None
        except RecursionError:
            raise TemplateError("rendering recursed too deeply (a macro calling itself?)",
                                file=self._root.filename,
                                fix="bound the template's recursion") from None
        except Exception as exc:
            raise self._render_error(exc) from exc
        finally:
            _BUDGET.reset(token)
        messages = []
        for role in MESSAGE_ROLES:
            content = getattr(module, role, None)
            if type(content) is Quoted:
                content = _quoted_text(content)
            if not isinstance(content, str):
                raise TemplateError(
                    f"the template defines no {role} message", file=self._root.filename,
                    fix=f"wrap the {role} message in {{% set {role} %}}...{{% endset %}}")
            messages.append({"role": role, "content": content.strip()})
        return RenderedPrompt(messages=tuple(messages), template_id=self.template_id,
                              template_hash=self.template_hash)
