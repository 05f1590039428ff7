"""Sliding-window compaction (DESIGN 7) with ADK's names: pure window arithmetic and summarizers.

An *invocation* is one user turn; its *events* are its messages, in order. A
compaction event summarizes every invocation up to its ``end_invocation`` (the
*boundary*); ``conversation_history()`` returns the latest compaction event
followed by the events after its boundary, individually.

Sliding window (``compaction_interval`` N, ``overlap_size`` K): once N
invocations have completed after the last boundary, the summarizer is given the
previous compaction event, the last K invocations it already covered, and the
N (or more, after a skipped window) new ones; the result covers everything up
to the newest completed invocation.

Worked timeline, interval 3, overlap 1 (``Ci`` a compaction, ``Ej`` the events
of invocation j; "sent" is ``conversation_history()`` after that invocation)::

    after  compaction  summarizer input        covers  sent
    1      -           -                       -       E1
    2      -           -                       -       E1 E2
    3      C1          E1 E2 E3                1-3     C1
    4      -           -                       -       C1 E4
    5      -           -                       -       C1 E4 E5
    6      C2          C1 E3 E4 E5 E6          1-6     C2
    7      -           -                       -       C2 E7
    8      -           -                       -       C2 E7 E8
    9      C3          C2 E6 E7 E8 E9          1-9     C3

Token budget (``token_threshold``, ``event_retention_size``): before a model
request whose estimated size reaches the threshold, everything after the
boundary is compacted except the last ``event_retention_size`` events, the cut
moved back to the start of their invocation.

Safety rules, enforced here: a cut is made only at an invocation start, so a
tool call is never separated from its return, and a window whose cut would
leave a call without its answer is not compacted; a summary that is not
shorter than what it replaces is rejected (``SummaryTooLong``); the
summarizer's input is clipped to ``MAX_SUMMARIZER_INPUT_CHARS``, and a summary
model's whole request to the token budget (``summarizer_input_chars``).

What survives every compaction is ``Retained``: decisions (recorded with the
tool, or stated by the user: "Decision: ...", "We decided ..."), the user's
rules ("always", "never", "must"), every file path named by anyone, and the
open questions. It is extracted deterministically from the events, merged with
the previous compaction's, and rendered as fixed sections after the
narrative, which is what the session file keeps in ``compacted_history_summary``
(``parse_compaction()`` reads it back).
"""

from __future__ import annotations

import dataclasses
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from session.compacted import (
    COMPACTION_HEADER_START,
    HEADER_RE,
    LAST_TURN_AGAIN,
    LAST_TURN_AGAIN_RE,
    LATEST_REQUESTS_START,
    OFFLINE_REQUESTS_RE,
    STARTED_WITH,
)
from session.errors import SessionError
from session.history import WIRE_HEADROOM, is_turn_start, message_chars
from session.house_rules import CUES as HOUSE_RULE_CUES
from session.house_rules import MOMENT_WORDS, is_house_rule
from session.printable import printable
from session.redaction import replace_known, scrub_text
from session.shares import (
    BETWEEN,
    NEWLINE_WIRE_CHARS,
    ends_within,
    first_lines_within,
    line_chars,
    newest_within,
)
from session.summary import EARLIER, user_prompts
from session.tool_pairs import tool_pairs
from session.wire import wire_chars, wire_head
from session.wrapped_answer import unwrapped

if TYPE_CHECKING:
    from pydantic_ai.models import Model

PLACEHOLDER: Final = "{conversation_history}"
MAX_SUMMARIZER_INPUT_CHARS: Final = 60_000
MIN_SUMMARIZER_INPUT_CHARS: Final = 2_000
"""The least conversation a summary request holds, however small the token budget."""
MAX_NARRATIVE_CHARS: Final = 450
MAX_LLM_NARRATIVE_CHARS: Final = 4 * MAX_NARRATIVE_CHARS
"""A summary model's answer over this is a runaway, not a summary."""
MAX_ITEM_CHARS: Final = 240
MAX_DECISIONS: Final = 200
MAX_RULES: Final = 60
MAX_PATHS: Final = 300
FIRST_KEPT: Final = 10
"""Of the paths and the rules, the oldest few kept whatever the caps and the budget (with
the newest): the files the user set out with ("the spec lives in docs/agent_spec.md") and
the first rules went first when the newest alone were kept (H153)."""
MAX_QUESTIONS: Final = 5
CHARS_PER_TOKEN: Final = 4


class CompactionError(SessionError):
    """A compaction that could not be made (the conversation goes on without it)."""


class SummaryTooLong(CompactionError):
    """The summary is not shorter than what it would replace."""


class RunawaySummary(CompactionError):
    """The summary model answered more than a summary's cap: cut, it would replace the
    narrative with whatever its head holds (it is not used; the offline summarizer is)."""


class CutSummary(CompactionError):
    """The summary model's answer stopped at its token limit: a summary cut mid-sentence
    (it is not used; the offline summarizer is)."""


class EchoedSummary(CompactionError):
    """The summary model answered with its instructions or a copy of the conversation, not
    a summary (it is not used; the offline summarizer is)."""


class UnusableSummary(CompactionError):
    """The summary model's answer is no summary: empty, a refusal, or not shorter than the
    conversation it was given (it is not used; the offline summarizer is)."""


class SummaryNotShorter(UnusableSummary):
    """The summary model's answer is not shorter than the conversation it was given: no
    fault of the model (a conversation of a few words), but no summary either."""


class BadPromptTemplate(CompactionError):
    """A summarizer prompt template without ``{conversation_history}``."""


# -- events -------------------------------------------------------------------


@dataclass(frozen=True)
class Retained:
    """What every compaction carries forward, as data: never only inside prose."""

    decisions: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    revoked: tuple[str, ...] = field(default=(), compare=False)
    """The rules the user took back in these messages (``forget the tabs rule``), as the
    words that name them: they leave the older rules at a merge (never stored)."""

    def merge(self, newer: Retained) -> Retained:
        """Union, oldest first by last mention (what ``newer`` names again is among the
        newest: the caps let go of the oldest), but the rules ``newer`` takes back;
        questions keep only the newest few that no decision has settled."""
        rules = [r for r in self.rules if not any(_names(r, w) for w in newer.revoked)]
        decisions = _mentioned_again(self.decisions, newer.decisions)[-MAX_DECISIONS:]
        questions = _mentioned_again(self.questions, newer.questions)
        return Retained(
            decisions=decisions,
            rules=_ends(_mentioned_again(rules, newer.rules), MAX_RULES),
            paths=_ends(_mentioned_again(self.paths, newer.paths), MAX_PATHS),
            questions=tuple(q for q in questions if not _answered(q, newer.decisions))[
                -MAX_QUESTIONS:
            ],
        )

    def is_empty(self) -> bool:
        return not (self.decisions or self.rules or self.paths or self.questions)


def _ends(items: tuple[str, ...], cap: int) -> tuple[str, ...]:
    """``items`` held to ``cap``: the ``FIRST_KEPT`` oldest and the newest."""
    if len(items) <= cap:
        return items
    return (*items[:FIRST_KEPT], *items[len(items) - (cap - FIRST_KEPT) :])


@dataclass(frozen=True)
class EventCompaction:
    """A summary of invocations ``start_invocation`` .. ``end_invocation``."""

    start_invocation: int
    end_invocation: int
    compacted_content: str
    """The narrative the summarizer wrote."""
    retained: Retained = field(default_factory=Retained)


@dataclass(frozen=True)
class Event:
    """One message of one invocation, or a compaction event (``message`` None)."""

    invocation_id: int
    message: ModelMessage | None = None
    compaction: EventCompaction | None = None

    @property
    def author(self) -> str:
        if self.compaction is not None:
            return "compaction"
        return "model" if isinstance(self.message, ModelResponse) else "user"


def compaction_event(compaction: EventCompaction) -> Event:
    return Event(compaction.end_invocation, compaction=compaction)


def events_from_messages(messages: Sequence[ModelMessage], first_invocation: int) -> list[Event]:
    """Number the messages by invocation, the first user turn being ``first_invocation``.

    Messages before the first user turn (none in a valid history) join it.
    """
    events: list[Event] = []
    invocation = first_invocation - 1
    for message in messages:
        if is_turn_start(message) or invocation < first_invocation:
            invocation += 1
        events.append(Event(invocation, message))
    return events


def conversation_history(events: Sequence[Event]) -> list[Event]:
    """The latest compaction event, then the events after its boundary, individually.

    Without a compaction the events are returned unchanged.
    """
    latest = latest_compaction(events)
    if latest is None:
        return list(events)
    return [
        compaction_event(latest),
        *(e for e in events if e.compaction is None and e.invocation_id > latest.end_invocation),
    ]


def latest_compaction(events: Sequence[Event]) -> EventCompaction | None:
    for event in reversed(events):
        if event.compaction is not None:
            return event.compaction
    return None


def invocation_ids(events: Sequence[Event]) -> list[int]:
    return list(dict.fromkeys(e.invocation_id for e in events if e.compaction is None))


# -- configuration and windows ----------------------------------------------------


class BaseEventsSummarizer(ABC):
    """Summarizes a window of events into one compaction event, or None to skip it."""

    @abstractmethod
    async def summarize_events(self, events: Sequence[Event]) -> Event | None: ...


@dataclass(frozen=True)
class EventsCompactionConfig:
    """ADK's configuration. ``compaction_interval`` 0 turns the sliding window off;
    ``token_threshold`` None turns the token trigger off."""

    compaction_interval: int
    overlap_size: int
    summarizer: BaseEventsSummarizer | None = None
    token_threshold: int | None = None
    event_retention_size: int = 0

    def __post_init__(self) -> None:
        if self.compaction_interval < 0 or self.overlap_size < 0 or self.event_retention_size < 0:
            raise ValueError("compaction settings must not be negative")


@dataclass(frozen=True)
class Window:
    """What one compaction summarizes: ``events`` (the previous compaction event first,
    if any) and the invocations it will then cover, up to ``end_invocation``."""

    events: tuple[Event, ...]
    start_invocation: int
    end_invocation: int


def sliding_window(events: Sequence[Event], config: EventsCompactionConfig) -> Window | None:
    """The window due after an invocation completed, or None (see the module's timeline)."""
    if config.compaction_interval <= 0:
        return None
    previous = latest_compaction(events)
    boundary = previous.end_invocation if previous else 0
    ids = invocation_ids(events)
    new = [i for i in ids if i > boundary]
    if len(new) < config.compaction_interval:
        return None
    first_new = ids.index(new[0])
    start = ids[max(0, first_new - config.overlap_size)]
    return _window(events, previous, start, new[-1])


def token_window(
    events: Sequence[Event],
    config: EventsCompactionConfig,
    request_tokens: int,
    other_chars: int = 0,
) -> Window | None:
    """The window due before a model request of ``request_tokens``, or None.

    What is kept whole is also held to half the threshold, so a window of huge
    turns (pasted files) is compacted rather than kept and sent again, and to what
    the budget leaves once the compaction's share and ``other_chars`` (what the
    request carries besides its history: the instructions, the message about to be
    sent) are counted, so the request it makes fits the budget.
    """
    if config.token_threshold is None or request_tokens < config.token_threshold:
        return None
    budget_chars = config.token_threshold * CHARS_PER_TOKEN
    room = budget_chars - budget_chars // COMPACTION_SHARE - other_chars
    retain_chars = max(0, min(budget_chars // 2, room))
    return retention_window(events, config.event_retention_size, retain_chars)


COMPACTION_SHARE: Final = 4
"""A request's compaction takes at most 1/COMPACTION_SHARE of the token budget; the
turns kept whole after it at most half (``token_window``)."""


def compaction_chars(config: EventsCompactionConfig) -> int | None:
    """The characters a request's compaction may take (None: no token budget)."""
    if config.token_threshold is None:
        return None
    return config.token_threshold * CHARS_PER_TOKEN // COMPACTION_SHARE


def uncompacted_chars(config: EventsCompactionConfig) -> int | None:
    """With automatic compaction off (interval 0), the characters of whole turns a request
    may carry: the token budget's, but for what a ``/compact`` summary may take (None:
    no token budget). The oldest turns are left out of the request, not summarized; after
    a ``/compact`` they join it (``fold_window``)."""
    if config.token_threshold is None:
        return None
    return config.token_threshold * CHARS_PER_TOKEN * (COMPACTION_SHARE - 1) // COMPACTION_SHARE


def retention_window(
    events: Sequence[Event], retain_events: int, retain_chars: int | None = None
) -> Window | None:
    """Compact everything after the boundary but the last ``retain_events`` events
    (moved back to their invocation's start), dropping the oldest of those whole
    invocations while they weigh more than ``retain_chars``; None if that leaves
    nothing to compact."""
    previous = latest_compaction(events)
    boundary = previous.end_invocation if previous else 0
    after = [e for e in events if e.compaction is None and e.invocation_id > boundary]
    if not after:
        return None
    ids = list(dict.fromkeys(e.invocation_id for e in after))
    kept = (
        ids[ids.index(after[max(0, len(after) - retain_events)].invocation_id) :]
        if retain_events > 0
        else []
    )
    if retain_chars is not None:
        weight = {i: 0 for i in ids}
        for event in after:
            assert event.message is not None
            weight[event.invocation_id] += message_chars(event.message)
        while kept and sum(weight[i] for i in kept) > retain_chars:
            kept.pop(0)
    end = kept[0] - 1 if kept else ids[-1]
    if end <= boundary:
        return None
    return _window(events, previous, ids[0], end)


def _window(
    events: Sequence[Event], previous: EventCompaction | None, start: int, end: int
) -> Window | None:
    chosen = [e for e in events if e.compaction is None and start <= e.invocation_id <= end]
    later = [e.message for e in events if e.message is not None and e.invocation_id > end]
    upto = [e.message for e in events if e.message is not None and e.invocation_id <= end]
    if not chosen or not cut_is_safe(upto, later):
        return None
    head = (compaction_event(previous),) if previous else ()
    covered_from = previous.start_invocation if previous else chosen[0].invocation_id
    return Window((*head, *chosen), covered_from, end)


def fold_window(events: Sequence[Event], end: int) -> Window | None:
    """The window that folds every invocation after the boundary up to ``end`` into the
    compaction: turns about to leave the request that no summary would cover otherwise
    (with compaction off, the tail held to the budget after a ``/compact``). None when
    there are none, or when the cut would leave a call without its answer."""
    previous = latest_compaction(events)
    boundary = previous.end_invocation if previous else 0
    if end <= boundary:
        return None
    return _window(events, previous, boundary + 1, end)


def cut_is_safe(before: Sequence[ModelMessage], after: Sequence[ModelMessage]) -> bool:
    """No tool call before the cut waits for an answer, and nothing after it answers one
    (calls and answers paired by position: a call id may be used again)."""
    cut = len(before)
    return all(
        pair.called_at >= cut or (pair.answered_at is not None and pair.answered_at < cut)
        for pair in tool_pairs([*before, *after])
    )


# -- what is kept -------------------------------------------------------------------

_LABELLED_DECISION_RE: Final = re.compile(
    r"\b(?:key\s+)?(?:decisions?|decided)\s*:\s*\S", re.IGNORECASE
)
"""``Decision: ...`` (or ``Decisions:``, ``Decided:``) anywhere in a sentence: kept from
the label on."""
_STATED_DECISION_RE: Final = re.compile(
    r"\b(?:we|i)(?:'ve| have)?\s+(?:decided|agreed)\b|\blet'?s go with\b", re.IGNORECASE
)
"""``We decided ...``, ``we agreed ...``: the whole sentence is kept."""
_IMPERATIVE: Final = (
    r"(?:please,?\s+)?(?:use|write|keep|answer|reply|respond|call|name|put|store|make|add|avoid"
    r"|do|don't|never|always|only|prefer|format|ask|send|run|check|follow|stick|speak|talk|be"
    r"|include|exclude|cite|test|commit|log|no|all|every|each|we|you|i)\b"
)
"""What an instruction begins with (after "From now on," or "IMPORTANT:")."""
_FROM_NOW: Final = r"\b(?:from now on|going forward|henceforth|from here on)\b\s*[,:]?\s*"
_NOT_AN_ORDER: Final = (
    r"(?:it|this|that|there|these|those|the|a|an|he|she|they|its|his|her|their)\b"
)
"""What a statement, not an instruction, begins with after "from now on" ("it seems ...",
"the team grows ..."), unless a modal makes it one ("the agent should log ...")."""
_STATED: Final = r"(?:[\w']+\s+){1,2}(?:is|are|am|was|were|will|seems?|looks?|feels?|think|guess)\b"
"""After "from now on": a subject and what it is or will be ("our budget is tight", "prices
will rise"), a statement, not an instruction."""
_NOT_ONE_OFF: Final = rf"(?!.*\b(?:{'|'.join(MOMENT_WORDS)})\b)"
"""A sentence that names nothing of the moment ("this", "now", "yet", "above"): a norm
over "all"/"every" said for this turn ("Use all cores for this build", "All tests should
pass now") is a request, not a rule (H149)."""
_NOT_DETERMINED: Final = r"(?!(?:a|an|the|my|our|these|those|that)\b)"
"""Not a determiner: "all identifiers" is every one, "all the data" is some at hand."""
_STANDING: Final = (
    r"^\s*(?:please,?\s+)?(?:answer|reply|respond|speak|talk)(?:\s+\w+)?\s+in\s+(?-i:[A-Z])[a-z]+"
    r"|^\s*I\s+(?:want|need|would like)\s+(?:all\s+)?your\s+(?:answers|replies|responses)\b"
    r"|^\s*(?:please,?\s+)?leave\s+\S*[./]\S*\s+alone\b|\boff[- ]limits\b"
    r"|^\s*(?:please,?\s+)?keep\s+(?:your\s+|all\s+)?(?:answers|replies|responses)\b"
    r"|^\s*you(?:\s+are|'re)?\s+not\s+allowed\s+to\b|^\s*you\s+aren't\s+allowed\s+to\b"
    r"|^\s*you\s+may\s+not\s+(?:use|run|touch|edit|change|modify|write|delete|read|call)\b"
    rf"|^\s*{_IMPERATIVE}[^.;!?]*?\s{_FROM_NOW}\W*$"
    rf"|^{_NOT_ONE_OFF}\s*(?:"
    r"(?:please,?\s+)?(?:use|prefer|keep|write|name|put|store|format)"
    rf"\s+(?:your\s+)?(?:all|every|each)\s+{_NOT_DETERMINED}"
    r"(?!of\b|together\b|down\b|up\b|out\b|at\b|in\b|over\b|again\b)\w"
    r"|(?:all|every|each)\s+(?!of\b)[\w' -]{1,40}?\s+"
    r"(?:needs?|should|shall|has to|have to|go|goes|belongs?)\b"
    rf"|I\s+(?:want|need|'d like|would like|expect)\s+(?!to\b){_NOT_DETERMINED}"
    rf"[^?]*\b(?:(?:all|every|each)\s+{_NOT_DETERMINED}|everywhere\b)"
    r"|(?:please,?\s+)?prefer\s+[^?]{1,40}?\s+(?:over|to|instead of)\s"
    r"|no\s+(?!(?:one|longer|more|need|doubt|problem|way|errors?|warnings?|failures?|issues?"
    r"|problems?|changes?|results?|matches|hits)\b)\w+(?:\s+\w+)?\s+in\s+"
    r"(?:the\s+|any\s+|our\s+|your\s+)?(?:output|code|answers?|replies|responses"
    r"|comments?|commits?|logs?|names?|identifiers?|messages?|files?|spec)\b)"
)
"""A standing instruction said without *always* or *never* (H133: each was lost at the
first compaction): how to answer ("Respond in French", "I want all your answers in
...", "Keep responses under 100 words"), a file to leave alone ("Leave config.yaml
alone", "... is off limits"), what is not allowed, an imperative that ends with
"from now on"; and a norm (H146): an imperative over "all"/"every" ("Keep all
identifiers in snake_case"), what all or every thing needs ("All functions need
docstrings"), "I want ... on every ...", "Prefer X over Y", "No X in the output", each
naming nothing of the moment (``_NOT_ONE_OFF``, ``_NOT_DETERMINED``)."""
_BANNED_THING: Final = (
    r"(?:emojis?|emoticons|jargon|slang|profanity|abbreviations|acronyms"
    r"|exclamation (?:marks|points)|semicolons|trailing (?:whitespace|spaces)"
    r"|(?:print|debug) (?:statements|calls)|prints"
    r"|globals|global (?:variables|state)|magic numbers|(?:wildcard|star) imports|bare excepts?"
    r"|markdown|bullet points|apologies|disclaimers|filler|preambles?|small talk|all caps"
    r"|em dashes|force[- ]pushes|new dependencies|(?:external|third[- ]party) (?:dependencies"
    r"|libraries|packages)|mocks|sleeps|todos|dead code|hard-?coded (?:secrets|paths|values"
    r"|credentials)|inline styles)"
)
"""What a user bans in a bare "No X." ("No emojis."): a thing of style or code, never an
answer ("No idea.", "No thanks.", "No errors.")."""
_CONVENTION_TOPIC: Final = (
    r"(?:indentation|indenting|formatting|line endings|quotes|quoting|strings|naming|names"
    r"|identifiers|(?:variable|function|class|file) names|filenames|constants|timestamps|dates"
    r"|logging|logs|comments|docstrings|docs|documentation|commit messages|type hints|typing"
    r"|imports|error handling|errors|exceptions|tests|testing|unit tests|mocking|config"
    r"|configuration|settings|secrets|dependencies|packaging|builds|linting|paths"
    r"|http (?:calls|requests)|serialization)"
)
"""What "Use X for Y" sets a convention for ("Use tabs for indentation"); any other Y
("Use pandas for the analysis") may be for this task alone."""
_OBLIGED: Final = (
    r"(?:mandatory|required|compulsory|obligatory|forbidden|banned|prohibited|disallowed"
    r"|(?:not|never) (?:allowed|permitted|acceptable)|off[- ]limits|a must|non-negotiable)"
)
_CONVENTION: Final = (
    rf"^\s*(?:please,?\s+)?no\s+(?:more\s+)?{_BANNED_THING}(?:\s+(?:ever|anywhere|at all))?"
    r"(?:,?\s+please)?\W*$"
    rf"|^{_NOT_ONE_OFF}\s*(?!(?:it|this|that|there|what|which|who|he|she|they|you|we|i)\b)"
    rf"\w[\w' /.-]{{0,40}}?\s+(?:is|are)\s+(?:always\s+)?{_OBLIGED}"
    r"(?:\s+(?:in|for|on|across|everywhere)\b[\w' /.-]{0,40})?\W*$"
    rf"|^{_NOT_ONE_OFF}\s*(?:please,?\s+)?(?:use|prefer)\s+\w[\w' .-]{{0,30}}?\s+(?:for|as)\s+"
    rf"(?:the\s+|all\s+|every\s+)?{_CONVENTION_TOPIC}(?:\s+everywhere)?(?:,?\s+please)?\W*$"
    r"|^\s*(?:all\s+|your\s+)?(?:answers|replies|responses|comments|code comments|commit messages"
    r"|docstrings|docs|documentation|messages|output)\s+(?:(?:always|only)\s+)?in\s+"
    r"(?-i:[A-Z])[a-z]+(?:\s+only)?(?:,?\s+please)?\W*$"
    r"|^\s*(?:please,?\s+)?(?:use|prefer)\s+(?:snake_case|camel ?case|pascal ?case|kebab-case"
    r"|screaming_snake_case|upper_snake_case|lower ?case|upper ?case)\s+(?:for|in)\s+"
    r"(?:all\s+|every\s+|our\s+)?(?:[\w-]+\s+)?(?:functions|classes|methods|variables|modules"
    r"|files|constants|fields|attributes|parameters|arguments|names|identifiers|tables|columns"
    r"|keys|branches|packages|types|enums)(?:\s+names)?(?:,?\s+please)?\W*$"
    r"|^\s*(?:tabs|spaces|single quotes|double quotes|snake_case|camelcase|kebab-case|pascalcase"
    r"|utc|iso ?8601|f-strings|pathlib|pytest|unittest|yaml|json|toml),?\s+(?:not|never|over"
    r"|instead of)\s+\w[\w' -]{0,30}\W*$"
    rf"|^{_NOT_ONE_OFF}\s*(?:max(?:imum)?|min(?:imum)?|at most|at least|no more than|up to)"
    r"\s*:?\s+\d[\d,]*\s+(?!\w+ed\b)[\w-]+(?:\s+(?!\w+ed\b)[\w-]+)?\s+(?:per|a|an|each"
    r"|in each|for each)"
    r"\s+[\w-]+(?:\s+of\s+[\w-]+)?\W*$"
    r"|^\s*(?:max(?:imum)?\s+)?line\s+(?:length|width)\s*(?::|=|of|is|at most|under)?\s*\d+"
    r"(?:\s+(?:chars?|characters|columns))?\W*$"
)
"""A convention said as a norm, without an imperative of its own (H153): "No emojis.",
"Type hints are mandatory.", "Use tabs for indentation.", "Answers in French, please.",
"Tabs, not spaces.", "Max 80 chars per line.", "Line length: 100", "Use snake_case for
functions." (a case style for a kind of name, H204). Each is the whole
sentence (anchored at both ends, every repeat bounded), so a longer sentence that only
begins so ("No emojis here because ...") is not one."""
_PREFERENCE: Final = (
    rf"^{_NOT_ONE_OFF}\s*(?:"
    r"(?:I|we)(?:'d|\s+would)?\s+(?:really\s+|much\s+|strongly\s+)?prefer\s+"
    rf"{_NOT_DETERMINED}(?!it\b|this\b|that\b|one\b|to\s+wait\b)\w[^?]*"
    r"|I(?:'d|\s+would)\s+(?:much\s+)?rather\s+(?:(?:you|we)\s+)?(?:not\s+)?"
    r"(?:use|write|keep|have|stick|name|put|avoid|see)\b[^?]*"
    r"|(?:please,?\s+)?keep\s+(?:all\s+|every\s+|each\s+|your\s+|new\s+)?"
    r"(?!it\b|them\b|that\b|this\b|the\b|a\b|an\b|my\b|going\b)[\w' -]{1,30}?\s+"
    r"(?:(?:under|below|within|at most|shorter than|fewer than|less than|no (?:longer|more) than)"
    r"\s+\d[\d,]*\b[\w' -]{0,30}|(?:short|small|simple|concise|brief|focused|pure))\W*$"
    r"|(?:please,?\s+)?(?:write|name|format|document)\s+(?:all\s+|every\s+|each\s+|your\s+)?"
    rf"{_NOT_DETERMINED}[\w' -]{{1,30}}?\s+(?:in|as|using)\s+(?:the\s+)?"
    r"(?:[\w' .-]{1,30}?\s+(?:style|case|format|conventions?)|snake_case|camelcase|kebab-case"
    r"|pascalcase|screaming_snake_case)\W*$"
    r"|we\s+(?:always\s+)?use\s+[\w' .-]{1,30}?,?\s+(?:not|never|instead of|rather than)\s+"
    r"\w[\w' -]{0,30}\W*$)"
    r"|^\s*remember\s*:\s*\w"
    r"|[,;:]\s*(?:so\s+|and\s+|but\s+)?(?:please\s+)?(?:do not|don't)\s+"
    r"(?!know|understand|think|care|see|get|like|worry|mind|ask|bother|panic|wait|judge)\w"
)
"""A standing preference said plainly (H189: each was lost at the first compaction): "I
prefer tabs over spaces", "I'd rather you use pytest", "Keep functions under 20 lines",
"Write docstrings in Google style", "We use 4 spaces, not tabs", ``Remember: ...``, and an
order after a comma ("I hate emojis, don't use them"); not a choice of the moment ("I
prefer this one", "I'd rather wait", "Keep the answer under 50 words")."""
_RULE_RE: Final = re.compile(
    r"\b(?:always|never|must(?:n't| not)?|do not ever|don't ever)\b"
    rf"|{_FROM_NOW}{_IMPERATIVE}"
    rf"|{_FROM_NOW}(?!{_NOT_AN_ORDER}|(?-i:[A-Z][a-z]+\s)|{_STATED})\w"
    rf"|{_FROM_NOW}{_NOT_AN_ORDER}[^.;!?]{{0,60}}?"
    r"\b(?:should|shall|must|needs? to|has to|have to)\b"
    r"|^\s*(?:please,?\s+)?stop\s+(?:using|adding|writing|putting|sending|making|calling"
    r"|including|mentioning|asking|saying|replying|responding|creating|generating|formatting"
    r"|printing|logging|apologi[sz]ing|repeating|suggesting|changing|editing|touching)\b"
    rf"|^\s*important\s*:\s*{_IMPERATIVE}"
    r"|^\s*(?:please,?\s+)?(?:rule\s*:|do not\b|don't\b|make sure\b|ensure\b|avoid\b"
    r"|remember to\b"
    r"|only\s+(?!\d|yesterday\b|today\b|now\b|once\b|twice\b|then\b|when\b|if\b|after\b"
    r"|before\b|a\b|one\b|the\b)\w+\b)"
    r"|^\s*(?:please,?\s+)?(?:use|prefer|keep|write|name|put|store|format)\b[^?]*"
    r"(?:\b(?:for|in|on|across)\s+(?:all|every|each)\b|\beverywhere\b)"
    rf"|{_STANDING}|{_CONVENTION}|{_PREFERENCE}",
    re.IGNORECASE,
)
"""A rule: *always*, *never*, *must*, an instruction after *from now on*, *going forward*
or ``IMPORTANT:`` (any that is not a statement: "From now on, return JSON only", "From
now on, tests go in tests/unit/", "..., the agent should log to ..."), an imperative ("Do
not ...", "Make sure ...", "Only use ...", "Avoid ...", "Stop using ...", "Use snake_case
for all ..."), or ``Rule: ...``."""
_TAG_QUESTION_RE: Final = re.compile(
    r",?\s*(?:ok|okay|right|alright|all right|please|understood|got it|yes)\s*\?+\s*$",
    re.IGNORECASE,
)
"""A rule asked to be acknowledged ("Always use UTC timestamps, ok?") is a rule."""
_REVOKE_RE: Final = re.compile(
    r"^\W*(?:(?:ok|okay|actually|also|and|so|now|please),?\s+)*(?:you can\s+)?"
    r"(?:forget|drop|ignore|remove|scrap|cancel|revoke|disregard)\s+(?:about\s+)?"
    r"(?:(?:the|my|that|this|our)\s+(.{1,40}?)\s+rule\b|the rule (?:about|on|for)\s+(.{1,40}))",
    re.IGNORECASE,
)
"""``forget the tabs rule``, ``drop the rule about lint`` (an instruction: not "never
ignore the review rule", nor "why did you ignore the lint rule?"): the rules naming those
words are no longer the user's."""
_CHIT_CHAT_RE: Final = re.compile(
    r"^\W*(?:(?:hello|hi|hey)\b\W*)?(?:how are you|how's it going|how is it going"
    r"|can you (?:hear|see) me|is this (?:thing )?on|are you (?:sure|there|ok|okay|still there)"
    r"|are we done|is it done|did (?:that|it|this) work|what do you think|what did (?:we|i|you)"
    r"|what have we|what was decided|which files did you|do you remember|did you|who are you"
    r"|what (?:is|was) your|what can you|(?:could|can|would|will) you)\b",
    re.IGNORECASE,
)
"""Questions that are no open question of the work: greetings, checks, recall of what was
said, requests ("could you ...?": the reply answers them)."""
_NOT_A_RULE_RE: Final = re.compile(
    rf"{_FROM_NOW}(?:i|we|you)\s+(?:am|are|was|were|seem|think|guess|feel|look)\b"
    r"|^\s*I\s+(?:always|never)\s+(?!use\b|want\b|need\b|prefer\b)\w+"
    r"|^\s*(?:you|they|he|she|it|this|that|there|the\s+\w+)\s+(?:always|never)\b"
    r"|^\s*(?:it|that|this|there|what)(?:'s|\s+is|\s+was)\s+(?:always|never)\b"
    r"|^\s*we\s+(?:always|never)\s+(?:forg[eo]t|lose|lost|miss)"
    r"|\b(?:always|never)\s+(?:\w+ed|happens?|fails?|breaks?|crash(?:es)?|works?|seems?"
    r"|gets?|got)\b"
    r"|\bmust\s+(?:have\b|be\s+(?:joking|kidding|wrong|right|it|the|a|an|that|this)\b)"
    r"|^\s*(?:do not|don't)\s+(?:know|understand|think|care|remember|see|get|like)\b"
    rf"|\bnever\s+mind\b|^(?!\W*no\s+{_BANNED_THING}\b)\W*(?:\w+\W+)?\w*\W*$",
    re.IGNORECASE,
)
""""I never liked ...", "we always forget ...", "It's always DNS", "The bug always happens
...", "It never worked ..." tell a story (but "I always want ..." and "We never deploy
on Fridays" are rules); "You must be joking", "it must have failed" deduce; "Do not know
why" is no instruction; "Never mind" is no rule; nor is a sentence of one or two words
("Never,", "Make sure.", "Never, ever.")."""
_EXTENSIONS: Final = (
    "md|mdx|markdown|txt|rst|py|pyi|ipynb|json|jsonl|ndjson|yaml|yml|toml|ini|cfg|conf|env|"
    "csv|tsv|sql|sh|bash|zsh|js|jsx|ts|tsx|mjs|cjs|html|htm|css|scss|xml|proto|graphql|rs|go|"
    "java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|lua|r|tf|hcl|dockerfile|lock|log|pdf|png|jpg|jpeg|"
    "svg|j2|jinja|jinja2|tmpl|tpl|prompt|parquet|arrow|feather|avro|db|sqlite|npy|npz|h5|pkl|"
    "pt|onnx|safetensors|gguf|bin|zip|gz|tgz|tar|xlsx|docx|pptx|wasm"
)
_PATH_RE: Final = re.compile(
    r"(?<![\w@:/.~#\\$-])((?:~|\.{1,2}|\$[A-Za-z_]\w*|\$\{[A-Za-z_]\w*\}|[A-Za-z]:(?=/))?/?[\w.-]+(?:/[\w.-]+)*/?)"
)
"""A path: relative, rooted at ``/``, ``~``, ``.``/``..``, a variable (``$HOME/x.py``,
``${XDG_CONFIG_HOME}/...``) or a drive with forward slashes (``D:/data/x.csv``)."""
_QUOTED_PATH_RE: Final = re.compile(
    r"""(?<!\w)(["'`])((?:[\w.~$-]+/)*[\w.-]+(?: [\w.-]+){1,3}\.[A-Za-z0-9]{1,10})\1(?!\w)"""
)
"""A quoted name with spaces (``"docs/My Notes.md"``, ``'Q3 Report.docx'``): kept whole
when it ends in a known extension and reads as no sentence (``_NOT_IN_NAMES``)."""
_NOT_IN_NAMES: Final = frozenset(
    [
        "a", "an", "the", "this", "that", "please", "read", "open", "see", "edit", "check",
        "look", "at", "in", "to", "and", "or", "of", "for", "is", "was", "file", "run", "use",
        "write",
    ]
)
"""Words that make a quoted text a sentence naming a file ('please read notes.md'), not
a file name."""
_ROOTED_RE: Final = re.compile(
    r"(?:\.{1,2}/|~/|/|\$[A-Za-z_]\w*/|\$\{[A-Za-z_]\w*\}/|[A-Za-z]:/)"
)
"""How a path rooted somewhere begins."""
_WINDOWS_PATH_RE: Final = re.compile(
    r"(?<![\w@:/.~#\\-])((?:[A-Za-z]:|\.{1,2}|\\\\[\w.-]+|[\w.-]+)(?:\\[\w.-]+)+\\?)"
)
"""A path with backslashes (``C:\\foo\\bar.py``, ``.\\run.ps1``, ``\\\\server\\share``,
``src\\app.py``): kept whole (``_PATH_RE`` took its last segment, ``bar.py``)."""
_ROOTED_WINDOWS_RE: Final = re.compile(r"[A-Za-z]:\\|\.{1,2}\\|\\\\")
_EXTENSION_RE: Final = re.compile(r"\w\.(?:" + _EXTENSIONS + r")$", re.IGNORECASE)
_DOTFILE_RE: Final = re.compile(r"(?:^|/)\.[A-Za-z][\w.-]*$")
_KNOWN_NAMES: Final = frozenset(
    [
        "Dockerfile",
        "Makefile",
        "Procfile",
        "Gemfile",
        "Jenkinsfile",
        "Vagrantfile",
        "Containerfile",
        "Justfile",
        "README",
        "LICENSE",
        "CHANGELOG",
        "CODEOWNERS",
    ]
)
_CANDIDATE_RE: Final = re.compile(
    r"(?<![\w@:/.~#\\$-])(?=(?:[A-Za-z]:)?[\w~${}-]*[./]|(?:" + "|".join(_KNOWN_NAMES) + r")\b)"
    + _PATH_RE.pattern.removeprefix(r"(?<![\w@:/.~#\\$-])")
)
"""``_PATH_RE`` where the token holds a dot or a slash, or begins with a known name: the
others (most words) cannot be paths, and a 5,000-turn resume spent most of its time making
a match of each (H166)."""
_TOP_DIRS: Final = frozenset(
    [
        "src",
        "lib",
        "app",
        "apps",
        "tests",
        "test",
        "docs",
        "doc",
        "data",
        "config",
        "configs",
        "prompts",
        "tools",
        "scripts",
        "bin",
        "deploy",
        "eval",
        "evals",
        "notebooks",
        "templates",
        "assets",
        "static",
        "public",
        "api",
        "pkg",
        "cmd",
        "internal",
        "examples",
        "spec",
        "specs",
        "infra",
        "migrations",
        "models",
        "agents",
        "memory",
        "schemas",
        "fixtures",
    ]
)
"""First segments that make a one-slash path a path (``src/agent``, not ``and/or``)."""
_NOT_FILES: Final = frozenset(
    f"{name}.js"
    for name in (
        "node", "next", "nuxt", "vue", "react", "three", "d3", "express", "ember", "backbone",
        "angular", "chart", "p5", "moment", "alpine", "svelte", "solid", "nest", "socket",
        "knockout", "meteor"
    )
)
"""Names that look like files but name a framework or library (``node.js``)."""
_BARE_EXTENSION_RE: Final = re.compile(r"\.(?!env$)(?:" + _EXTENSIONS + r")$", re.IGNORECASE)
"""``.j2``, ``.md``: a kind of file, not a dot file (``.env`` is one)."""
_ALTERNATIVES_RE: Final = re.compile(
    r"\d+(?:/\d+)+|[A-Z0-9]{2,6}(?:/[A-Z0-9]{2,6})+"
    r"|(?i:(?:mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*)"
    r"(?:/(?i:(?:mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*))+"
)
"""Slashes between numbers, acronyms or day and month names: no path."""
_SENTENCE_RE: Final = re.compile(r"(?:[^.!?\n]|[.!?](?=[^\s.!?]))+[.!?]*")
"""A sentence: up to a stop followed by a space (``agent_spec.md`` does not end one)."""


def _flat(text: str) -> str:
    return " ".join(text.split())


MAX_DECISION_CHARS: Final = 1000
"""A decision as the session file keeps it (a compaction's text clips it shorter)."""


def merge_decisions(*groups: Iterable[str]) -> tuple[str, ...]:
    """A session's decisions: each on one line of at most ``MAX_DECISION_CHARS``, once,
    the newest ``MAX_DECISIONS``. A copy a compaction clipped (``…``) of one that is here
    whole is the same decision; two that only begin alike are two."""
    clipped = (
        _clip(item, MAX_DECISION_CHARS) for group in groups for item in group if item.strip()
    )
    seen: dict[str, str] = {}
    for item in clipped:  # "Decision: X." said, "X" recorded by the tool: one decision
        seen.setdefault(_DECISION_LABEL_RE.sub("", item).rstrip(" .").casefold(), item)
    items = tuple(seen.values())
    whole = [item for item in items if not item.endswith("…")]
    kept = [
        item
        for item in items
        if not item.endswith("…")
        or not any(other.casefold().startswith(item[:-1].casefold()) for other in whole)
    ]
    return tuple(kept)[-MAX_DECISIONS:]


_DECISION_LABEL_RE: Final = re.compile(r"^\s*(?:decision|decided)\s*:\s*", re.IGNORECASE)


def _clip(text: str, limit: int) -> str:
    flat = _flat(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _first_words(text: str, words: int = 14) -> str:
    """The first ``words`` words of ``text`` within ``_clip_words``'s limit, with an
    ellipsis where the text goes on."""
    split = text.split()
    if len(split) <= words:
        return _clip_words(" ".join(split))
    return _clip_words(" ".join(split[:words]).rstrip(",;:") + "…")


def _clip_words(text: str, limit: int = 120) -> str:
    """``text`` on one line within ``limit`` characters, cut after a whole word (with an
    ellipsis) where it is longer: a narrative's opening read "language dete."."""
    flat = _flat(text)
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(",;:") + "…"


def _mentioned_again(older: Iterable[str], newer: Iterable[str]) -> tuple[str, ...]:
    """``older`` then ``newer``, each once: an item in both takes its place in ``newer``."""
    latest = _union(newer)
    again = {item.casefold() for item in latest}
    return (*_union(i for i in older if i.casefold() not in again), *latest)


def _union(*groups: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for group in groups:
        for item in group:
            seen.setdefault(item.casefold(), item)
    return tuple(seen.values())


def _model_texts(message: ModelMessage) -> list[str]:
    if not isinstance(message, ModelResponse):
        return []
    return [p.content for p in message.parts if isinstance(p, TextPart)]


def _tool_calls(message: ModelMessage) -> list[ToolCallPart]:
    if not isinstance(message, ModelResponse):
        return []
    return [p for p in message.parts if isinstance(p, ToolCallPart)]


def file_paths(text: str) -> list[str]:
    """Workspace-looking paths in ``text``: a known file extension or file name, a dot
    file, or a slash that is not just "and/or" (a leading ``./``, ``~/`` or ``/``, a
    trailing ``/``, two slashes, or a first segment such as ``src/``)."""
    found = []
    windows = list(_WINDOWS_PATH_RE.finditer(text)) if "\\" in text else []
    for match in windows:
        path = match.group(1).rstrip(".,;:")
        if _ROOTED_WINDOWS_RE.match(path) or _EXTENSION_RE.search(path):
            found.append((match.start(), path))
    quoted = [m for m in _QUOTED_PATH_RE.finditer(text) if " " in m[2] and _named_so(m[2])]
    found.extend((match.start(), match[2]) for match in quoted)
    whole = windows + quoted
    for match in _CANDIDATE_RE.finditer(text):
        if any(w.start() <= match.start() < w.end() for w in whole):
            continue  # a part of a Windows path or of a quoted name with spaces
        path = match.group(1).rstrip(".,;:")
        if "/" not in path and "." not in path and path not in _KNOWN_NAMES:
            continue  # a word (most tokens): neither an extension, a dot file nor a slash
        if text[match.end() : match.end() + 3] == "://" or "//" in path or len(path) < 2:
            continue
        name = path.rstrip("/").rsplit("/", 1)[-1]
        slashes = path.count("/")
        if not slashes and (name.casefold() in _NOT_FILES or _BARE_EXTENSION_RE.match(name)):
            continue  # a framework (node.js), or a kind of file (.j2 files), not a file
        if slashes and _ALTERNATIVES_RE.fullmatch(path):
            continue  # a date (12/03/2024), a list of acronyms or days (TCP/UDP, Mon/Tue)
        if (
            _EXTENSION_RE.search(path)
            or _DOTFILE_RE.search(path)
            or name.partition(".")[0] in _KNOWN_NAMES
            or (
                slashes
                and len(path) > 2
                and (
                    _ROOTED_RE.match(path) is not None
                    or path.endswith("/")
                    or slashes >= 2
                    or path.split("/", 1)[0] in _TOP_DIRS
                )
            )
        ):
            found.append((match.start(), path))
    return [path for _, path in sorted(found)]


def _named_so(quoted: str) -> bool:
    """Whether a quoted text with spaces is a file's name: a known extension, and no word of
    a sentence about a file ("please read notes.md")."""
    name = quoted.rsplit("/", 1)[-1]
    words = name.casefold().split()
    return _EXTENSION_RE.search(name) is not None and not _NOT_IN_NAMES.intersection(words)


def _decisions_in(text: str) -> list[str]:
    """Every decision of ``text``, sentence by sentence (several may share a line)."""
    found = []
    for line in text.splitlines():
        for sentence in _SENTENCE_RE.findall(line):
            labelled = _LABELLED_DECISION_RE.search(sentence)
            if labelled is not None:
                found.append(_clip(sentence[labelled.start() :].strip(), MAX_ITEM_CHARS))
            elif _STATED_DECISION_RE.search(sentence):
                found.append(_clip(sentence.strip(), MAX_ITEM_CHARS))
    return found


_FENCED_RE: Final = re.compile(
    r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)", re.DOTALL | re.MULTILINE
)
_QUOTED_LINE_RE: Final = re.compile(r"^(?:[ ]{4}|\t|[ \t]*>).*$", re.MULTILINE)
_FILE_CONTENT_RE: Final = re.compile(
    r"^\s*(?:please,?\s+)?(?:(?:write|update|append|save|create|overwrite|edit)(?:\s+to)?"
    r"|add\s+(?:this|these|the following|it)\s+to)\s+\S*[./]\S*?\s*(?::|\n)",
    re.IGNORECASE,
)


def _said_to_us(text: str) -> str:
    """What a user prompt says to the assistant: not the content of a file it asks to have
    written (``write agent_spec.md: ...``, or on the lines after ``write agent_spec.md``),
    nor a fenced, indented or quoted block: their *must* and *never* are the designed
    agent's, not rules for the assistant (a spec of 70 of them pushed every rule of the
    user's out)."""
    text = _QUOTED_LINE_RE.sub("", _FENCED_RE.sub("", text))
    content = _FILE_CONTENT_RE.match(text)
    return text[: content.end()] if content else text


MAX_RULES_PER_MESSAGE: Final = 8
"""A message with more rule-like sentences is a document (a pasted spec, requirements):
its first few are kept, the rest would push out the user's own rules."""


def _rules_in(text: str) -> list[str]:
    found: list[str] = []
    for line in _said_to_us(text).splitlines():
        for sentence in _SENTENCE_RE.findall(line):
            sentence = sentence.strip()
            if sentence.endswith("?"):
                tagged = _TAG_QUESTION_RE.search(sentence)
                if tagged is None:
                    continue
                sentence = sentence[: tagged.start()].rstrip(" ,") + "."
            if (
                _RULE_RE.search(sentence) and not _NOT_A_RULE_RE.search(sentence)
            ) or is_house_rule(sentence):
                found.append(_clip(sentence, MAX_ITEM_CHARS))
    return found[:MAX_RULES_PER_MESSAGE]


def _questions_in(text: str) -> list[str]:
    return [
        _clip(sentence.strip(), MAX_ITEM_CHARS)
        for line in _said_to_us(text).splitlines()
        for sentence in _SENTENCE_RE.findall(line)
        if sentence.strip().endswith("?")
        and len(sentence.split()) >= 3
        and not _TAG_QUESTION_RE.search(sentence)
        and not _CHIT_CHAT_RE.search(sentence)
    ]


def _revoked_in(text: str) -> list[str]:
    """The words of each rule ``text`` takes back (``forget the tabs rule``: ``tabs``), one
    instruction per sentence (a question takes nothing back)."""
    found = []
    for line in text.splitlines():
        for sentence in _SENTENCE_RE.findall(line):
            match = _REVOKE_RE.match(sentence)
            if match is None or sentence.rstrip().endswith("?"):
                continue
            named = (match[1] or match[2] or "").lower()
            words = [w for w in re.findall(r"[\w-]{3,}", named) if w not in _NOT_NAMING]
            if words:
                found.append(" ".join(words))
    return found


def rules_in_force(rules: Sequence[str], messages: Iterable[ModelMessage]) -> list[str]:
    """``rules`` but those the user's prompts in ``messages`` (the turns since they were
    gathered) take back: a revocation counts at once, not at the next compaction."""
    taken_back = [
        words
        for text in user_prompts(list(messages))
        if "rule" in text.lower()
        for words in _revoked_in(text)
    ]
    return [r for r in rules if not any(_names(r, words) for words in taken_back)]


_NOT_NAMING: Final = frozenset(("rule", "last", "old", "new", "first", "that", "this", "the"))
"""Words of a revocation that name no rule ("forget my last rule" takes back nothing)."""


def _names(rule: str, revoked: str) -> bool:
    """Whether ``rule`` names every word of a revocation (``tabs``: "always use tabs")."""
    words = {word.removesuffix("s") for word in re.findall(r"[\w-]+", rule.lower())}
    return all(word.removesuffix("s") in words for word in revoked.split())


_CONTENT_WORD_RE: Final = re.compile(r"[a-z0-9][\w-]{2,}")
_STOP_WORDS: Final = frozenset(
    (
        "the", "and", "for", "with", "should", "would", "could", "shall", "will", "can", "use",
        "using", "are", "our", "that", "this", "what", "which", "how", "when", "where", "who",
        "why", "does", "did", "not"
    )
)


def _answered(question: str, decisions: Iterable[str]) -> bool:
    """Whether one of ``decisions`` settles ``question``: it holds most of the question's
    words ("should we use Redis for the cache?", "Use Redis for the cache")."""
    words = {w for w in _CONTENT_WORD_RE.findall(question.lower()) if w not in _STOP_WORDS}
    if len(words) < 2:
        return False
    for decision in decisions:
        said = set(_CONTENT_WORD_RE.findall(decision.lower()))
        if len(words & said) * 3 >= len(words) * 2:
            return True
    return False


def stated_decisions(messages: Sequence[ModelMessage]) -> list[str]:
    """The decisions the user states in ``messages`` (``Decision: ...``), scrubbed: the
    session keeps them from their turn on, compacted or not (compaction may be off)."""
    return [d for text in map(scrub_text, user_prompts(messages)) for d in _decisions_in(text)]


_MAY_NAME_A_PATH_RE: Final = re.compile(
    r"/|\\|(?i:\.[a-z])|" + "|".join(sorted(_KNOWN_NAMES))
)
"""What every path ``file_paths`` finds holds: a slash or a backslash, a dot before a letter (an
extension, a dot file; ignoring case, as ``_EXTENSION_RE`` does), or a known file name."""
_MAY_STATE_RE: Final = re.compile(
    r"\?|always|never|must|do not|don't|from now on|going forward|henceforth|from here on"
    r"|stop|important|rule|make sure|ensure|avoid|remember to|only|all|every|each"
    r"|decision|decided|agreed|go with|answer|repl|respon|speak|talk|leave|limits|keep"
    r"|allowed|may\s+not|prefer|\bno\s+\w+(?:\s+\w+)?\s+in\b"
    r"|\bno\s|use|mandatory|required|compulsory|obligatory|forbidden|banned|prohibited"
    r"|permitted|acceptable|a must|non-negotiable|\sin\s|\snot\s|\sover\s|instead of|max|min"
    r"|at most|at least|up to|line|rather|remember|style|case|format|convention",
    re.IGNORECASE,
)
"""What every decision, rule, revocation and open question a user prompt states holds:
a word that ``_LABELLED_DECISION_RE``, ``_STATED_DECISION_RE``, ``_RULE_RE`` (each of its
alternatives, ``_CONVENTION``'s too) or ``_REVOKE_RE`` needs, or a question mark. Keep it
in step with them (``is_house_rule`` keeps its own, ``HOUSE_RULE_CUES``)."""


def may_retain(text: str, *, said_by_user: bool) -> bool:
    """False only when ``text`` scrubbed can yield nothing ``extract_retained`` keeps: it
    holds none of what a path (or, from the user, a decision, rule or question) needs.
    Tested on the text as it is: a scrub only replaces a span with ``[REDACTED]`` (after
    the key it keeps), whose characters are none of those, so it can add none of them.
    Scrubbing is the cost (a 29 MB tail's texts took 22 s), and most of a conversation's
    prose names nothing to keep."""
    if _MAY_NAME_A_PATH_RE.search(text):
        return True
    return said_by_user and (
        _MAY_STATE_RE.search(text) is not None or HOUSE_RULE_CUES.search(text) is not None
    )


MAX_PATHS_PER_TEXT: Final = 40
"""A text naming more files is a document (a pasted log, a listing): its first few are
kept, the rest would push the files the user works on out of ``MAX_PATHS``."""
RETAIN_SCAN_CHARS: Final = 50_000
"""Of a longer text, what is read for what to keep: its first and last lines within this
many characters each (the user's own words around a paste). The whole of a 6 MB pasted
log took 24 s to read, and what is in its middle is the log's."""


def _scanned(text: str) -> str:
    """``text``, or of a long one its first and last whole lines within
    ``RETAIN_SCAN_CHARS`` each."""
    if len(text) <= 2 * RETAIN_SCAN_CHARS:
        return text
    first = text[:RETAIN_SCAN_CHARS].rpartition("\n")[0]
    last = text[-RETAIN_SCAN_CHARS:].partition("\n")[2]
    return f"{first}\n{last}"


def extract_retained(messages: Iterable[ModelMessage]) -> Retained:
    """Decisions, rules, file paths and open questions named in ``messages``; texts are
    scrubbed of credentials first (a value cut out of its ``key: value`` context, as a
    "path", would no longer be recognised when the summary is saved), those that may name
    any (``may_retain``)."""
    decisions: list[str] = []
    rules: list[str] = []
    paths: list[str] = []
    questions: list[str] = []
    revoked: list[str] = []
    for message in messages:
        asked = map(_scanned, user_prompts([message]))
        prompts = [t for t in asked if may_retain(t, said_by_user=True)]
        for text in map(scrub_text, prompts):
            stated = _decisions_in(text)
            decisions += stated
            rules += [r for r in _rules_in(text) if not any(r in d or d in r for d in stated)]
            taken_back = _revoked_in(text)
            rules = [r for r in rules if not any(_names(r, words) for words in taken_back)]
            revoked += taken_back
            paths += _union(file_paths(text))[:MAX_PATHS_PER_TEXT]
            questions += _questions_in(text)
        said = map(_scanned, _model_texts(message))
        texts = [t for t in said if may_retain(t, said_by_user=False)]
        for text in map(scrub_text, texts):
            paths += _union(file_paths(text))[:MAX_PATHS_PER_TEXT]
        for call in _tool_calls(message):
            args = call.args_as_dict()
            if call.tool_name == "record_decision" and isinstance(args.get("decision"), str):
                decisions.append(_clip(args["decision"], MAX_ITEM_CHARS))
            for key in ("path", "directory"):
                value = args.get(key)
                if isinstance(value, str) and value.strip() not in ("", "."):
                    paths.append(value.strip().removeprefix("./"))
    return Retained(
        decisions=_union(decisions),
        rules=_union(rules),
        paths=_union(paths),
        questions=tuple(q for q in _union(questions) if not _answered(q, decisions)),
        revoked=tuple(revoked),
    )


def retained_of(events: Sequence[Event]) -> Retained:
    """The previous compaction's ``Retained`` merged with what ``events`` add."""
    previous = latest_compaction(events)
    base = previous.retained if previous else Retained()
    return base.merge(extract_retained(e.message for e in events if e.message is not None))


# -- rendering and parsing the compacted summary -------------------------------------

_SECTIONS: Final = (
    ("decisions", "Decisions made:"),
    ("rules", "User rules (always follow them):"),
    ("paths", "Files named so far:"),
    ("questions", "Open questions:"),
)


def normalize_narrative(text: str) -> str:
    """A narrative as the session file keeps it: no blank lines (they separate the
    sections), no trailing spaces, so that ``parse_compaction`` reads it back exactly."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines() if line.strip())


def render_compaction(
    compaction: EventCompaction,
    *,
    rules: bool = True,
    max_chars: int | None = None,
    listed: frozenset[str] = frozenset(),
) -> str:
    """The text the session file keeps (and, without ``rules``, which the instructions
    carry, the model is sent): header and narrative in one block, then each section
    in a block of its own.

    With ``max_chars`` (a request's share of the token budget) the narrative keeps its
    first lines within half of it, and the sections their newest items within what the
    header and narrative leave, saying how many earlier ones the session file keeps:
    decisions and paths gathered over a long conversation, or a summary model's wordy
    narrative, would otherwise outgrow the budget themselves (and compact every turn).
    Decisions in ``listed`` (on one line each: those the resume context lists) are left
    out: a request carries each decision once."""
    head = (
        f"{COMPACTION_HEADER_START}{compaction.start_invocation}-"
        f"{compaction.end_invocation}, compacted); the later turns follow in full."
    )
    sections = [
        (heading, [f"- {item}" for item in items])
        for name, heading in _SECTIONS
        if (rules or name != "rules")
        and (items := _section_items(getattr(compaction.retained, name), name, listed))
    ]
    narrative = normalize_narrative(compaction.compacted_content)
    if max_chars is not None:  # the narrative goes before the first paths and rules
        room = min(max_chars // 2, max_chars - _first_kept_chars(sections))
        room -= wire_chars(head) + NEWLINE_WIRE_CHARS
        narrative = first_lines_within(narrative, max(room, 80))
    first = "\n".join(filter(None, [head, narrative]))
    if max_chars is not None:
        sections = _within(sections, max_chars - wire_chars(first))
    return "\n\n".join([first, *("\n".join([heading, *lines]) for heading, lines in sections)])


def _section_items(items: Sequence[str], name: str, listed: frozenset[str]) -> list[str]:
    """A section's items on one line each, but for the decisions in ``listed`` (a long
    one kept clipped, ending in an ellipsis, is the listed one it begins)."""
    flat = [_flat(item) for item in items]
    if name != "decisions" or not listed:
        return flat
    return [item for item in flat if not _is_listed(item, listed)]


def _is_listed(decision: str, listed: frozenset[str]) -> bool:
    if decision in listed:
        return True
    head = decision.removesuffix("…")
    return head != decision and any(whole.startswith(head) for whole in listed)


_FIRST_KEPT_SECTIONS: Final = frozenset(heading for name, heading in _SECTIONS if name in (
    "rules", "paths"))
"""The sections whose oldest ``FIRST_KEPT`` items a request keeps with the newest."""


def _first_kept_chars(sections: list[tuple[str, list[str]]]) -> int:
    """What the oldest items of the paths and rules take, with their headings and the line
    that counts those left out: held before the narrative and the other sections."""
    return sum(
        _heading_chars(heading) + line_chars(lines[:FIRST_KEPT]) + len(BETWEEN) + 8
        for heading, lines in sections
        if heading in _FIRST_KEPT_SECTIONS
    )


def _within(sections: list[tuple[str, list[str]]], room: int) -> list[tuple[str, list[str]]]:
    """``sections`` held to ``room`` characters: smallest first, each takes what it needs
    up to an equal share of what is left, so what a small one leaves goes to the others;
    the paths and rules at least what their oldest items need (``ends_within``)."""
    kept = dict(enumerate(lines for _, lines in sections))
    by_size = sorted(kept, key=lambda index: line_chars(kept[index]))
    floor = {i: _first_kept_chars([sections[i]]) for i in kept}
    for done, index in enumerate(by_size):
        heading = sections[index][0]
        later = sum(floor[i] for i in by_size[done + 1 :])
        share = max(room // (len(by_size) - done), min(floor[index], room - later))
        share -= _heading_chars(heading)
        if heading in _FIRST_KEPT_SECTIONS:
            kept[index] = ends_within(kept[index], share, FIRST_KEPT)
        else:
            kept[index] = newest_within(kept[index], share)
        room -= _heading_chars(heading) + line_chars(kept[index])
    return [(heading, kept[index]) for index, (heading, _) in enumerate(sections)]


def _heading_chars(heading: str) -> int:
    """What a section's heading adds on the wire: itself, its newline and the blank line
    before it (its last line's newline, counted by ``line_chars``, is not written)."""
    return wire_chars(heading) + NEWLINE_WIRE_CHARS * 2


def parse_compaction(text: str | None) -> EventCompaction | None:
    """Read back ``render_compaction()``'s text: the first block is the header and the
    narrative (whatever its lines say), each later block a section. A text in another
    form (an older file) is kept whole as the narrative of a compaction of nothing."""
    if not text or not text.strip():
        return None
    first, *rest = text.split("\n\n")
    head, _, narrative = first.partition("\n")
    header = HEADER_RE.match(head)
    if header is None:
        return EventCompaction(0, 0, text.strip())
    headings = {heading: name for name, heading in _SECTIONS}
    sections: dict[str, tuple[str, ...]] = {}
    for block in rest:
        if LAST_TURN_AGAIN_RE.fullmatch(block):
            continue  # what a request (and a save) says after it, no part of it
        heading, *items = block.split("\n")
        name = headings.get(heading)
        if name is None or not all(item.startswith("- ") for item in items):
            narrative += "\n" + block  # not one of ours: keep its words
            continue
        sections[name] = tuple(item[2:] for item in items)
    return EventCompaction(
        int(header[1]), int(header[2]), normalize_narrative(narrative), Retained(**sections)
    )


@lru_cache(maxsize=16)
def compaction_message(
    compaction: EventCompaction,
    max_chars: int | None = None,
    listed: frozenset[str] = frozenset(),
    last_turn_again: bool = False,
) -> ModelRequest:
    """The compaction as pydantic-ai's own ``CompactionPart``, first in the history, its
    sections held to ``max_chars`` (see ``render_compaction``); ``last_turn_again``: the
    request carries its last turn again after it, which it says (``LAST_TURN_AGAIN``:
    pydantic-ai merges it with the request after it, whose turn's stamp is then lost).

    Rendered once per compaction (a turn asks for it twice: the token budget's
    estimate and the request itself); like the history's own messages, the one
    message is shared by every request that carries it."""
    text = render_compaction(compaction, rules=False, max_chars=max_chars, listed=listed)
    if last_turn_again:
        text += "\n\n" + LAST_TURN_AGAIN.format(number=compaction.end_invocation)
    return ModelRequest(parts=[CompactionPart(content=text)])


# -- summarizers ------------------------------------------------------------------------


def window_without_secrets(window: Window, known_secrets: tuple[str, ...]) -> Window:
    """``window`` with the session's known secret values (its environments', those found
    in it) replaced in every text a summarizer reads: the patterns a summarizer runs do not
    know them, and its summary goes to the summary model and into the model's requests."""
    if not known_secrets:
        return window
    events = tuple(_event_without_secrets(e, known_secrets) for e in window.events)
    return dataclasses.replace(window, events=events)


def messages_without_secrets(
    messages: Sequence[ModelMessage], known_secrets: tuple[str, ...]
) -> tuple[ModelMessage, ...]:
    """``messages`` with the known secret values replaced in their texts (the very
    messages where none is)."""
    return tuple(_message_without_secrets(m, known_secrets) for m in messages)


def _event_without_secrets(event: Event, known_secrets: tuple[str, ...]) -> Event:
    if event.message is not None:
        message = _message_without_secrets(event.message, known_secrets)
        return event if message is event.message else dataclasses.replace(event, message=message)
    if event.compaction is None:
        return event
    cleaned = compaction_without_secrets(event.compaction, known_secrets)
    return dataclasses.replace(event, compaction=cleaned)


def compaction_without_secrets(
    compaction: EventCompaction, known_secrets: tuple[str, ...]
) -> EventCompaction:
    """``compaction`` with the known secret values replaced in its narrative and in what it
    retained (the very compaction when none is in them)."""
    retained = compaction.retained
    cleaned = dataclasses.replace(
        compaction,
        compacted_content=replace_known(compaction.compacted_content, known_secrets),
        retained=dataclasses.replace(
            retained,
            decisions=replace_known(retained.decisions, known_secrets),
            rules=replace_known(retained.rules, known_secrets),
            paths=replace_known(retained.paths, known_secrets),
            questions=replace_known(retained.questions, known_secrets),
        ),
    )
    return compaction if cleaned == compaction else cleaned


_TEXT_FIELDS: Final = ("content", "args")
"""The fields of a message's parts that hold what was said: a prompt's, a reply's or a
tool's return ``content``, a tool call's ``args``."""


def _message_without_secrets(
    message: ModelMessage, known_secrets: tuple[str, ...]
) -> ModelMessage:
    parts = [_part_without_secrets(part, known_secrets) for part in message.parts]
    if all(new is old for new, old in zip(parts, message.parts, strict=True)):
        return message
    return dataclasses.replace(message, parts=parts)  # type: ignore[arg-type]


def _part_without_secrets(part: Any, known_secrets: tuple[str, ...]) -> Any:
    changes = {}
    for name in _TEXT_FIELDS:
        value = getattr(part, name, None)
        cleaned = replace_known(value, known_secrets)
        if cleaned is not value:
            changes[name] = cleaned
    return dataclasses.replace(part, **changes) if changes else part


def events_text(events: Sequence[Event], limit: int = MAX_SUMMARIZER_INPUT_CHARS) -> str:
    """The window as plain text for a summarizer, within ``limit`` characters as the wire
    carries them (``wire_chars``, as a chat request is held to the budget): held to
    ``limit`` characters, a conversation in Chinese (three bytes each) was sent at 2.5
    times the budget, and a summary model with the chat model's window refused it. Made
    again within a smaller share until it fits (the share is cut by the overshoot)."""
    text = _events_text(events, limit)
    for _ in range(WIRE_FIT_ROUNDS):
        size = wire_chars(text)
        if size <= limit:
            return text
        text = _events_text(events, max(1, len(text) * limit // size - 1))
    return wire_head(text, limit)  # no fit in those rounds: its end dropped until it fits


WIRE_FIT_ROUNDS: Final = 4
"""How many times ``events_text`` makes the text again within a smaller share."""


def _events_text(events: Sequence[Event], limit: int) -> str:
    """The window as plain text for a summarizer, within ``limit`` characters.

    What is cut goes from the middle of the longest messages (each keeps its start and
    its end, and says how much was left out) and, when even that is not enough, from the
    oldest turns (a line says which): the newest turns, the most relevant, always stay,
    and short messages (the user's rules, the files named) stay whole. The earlier
    summary comes first, within half of ``limit``.

    Each turn opens with a line naming its number in the session (``turn_heading``): the
    turns the earlier summary already covers (the overlap, read again) are said to be, or
    a summary model took them for turns after it and counted them twice."""
    head: list[str] = []
    turns: list[tuple[int, list[str]]] = []
    previous = latest_compaction(events)
    boundary = previous.end_invocation if previous is not None else 0
    for event in events:
        if event.compaction is not None:
            head.append("[earlier summary] " + render_compaction(event.compaction))
            continue
        message = event.message
        assert message is not None
        if not turns or turns[-1][0] != event.invocation_id:
            heading = turn_heading(event.invocation_id, again=event.invocation_id <= boundary)
            turns.append((event.invocation_id, [heading]))
        turns[-1][1].extend(_part_lines(message))
    head = _within_share(head, limit // 2)
    room = limit - sum(len(line) + 1 for line in head)
    kept = _newest_turns([lines for _, lines in turns], room)
    left_out = len(turns) - len(kept)
    if left_out:
        note = LEFT_OUT_TURNS.format(turns=turns_named(turns[0][0], turns[left_out - 1][0]))
        head.append(note)
        room -= len(note) + 1
    lines = _within_share([line for lines in kept for line in lines], room)
    return "\n".join([*head, *lines])[:limit]


LEFT_OUT_TURNS: Final = "[{turns} left out here for length]"
CUT_MARK: Final = " […{chars:,} characters left out…] "
MIN_LINE_SHARE: Final = 200
"""The fewest characters of each line of a turn a summarizer's input keeps: older turns
are left out rather than every line cut shorter."""
SCRUB_MARGIN: Final = 1_000
"""Characters scrubbed beyond what is kept of a cut line, so that a secret whose key is
cut off is still found by its key."""


def _part_lines(message: ModelMessage) -> list[str]:
    lines = []
    for part in message.parts:
        if isinstance(part, UserPromptPart) and isinstance(part.content, str):
            lines.append(f"user: {part.content}")
        elif isinstance(part, TextPart):
            lines.append(f"assistant: {part.content}")
        elif isinstance(part, ToolCallPart):
            lines.append(f"tool call {part.tool_name}: {part.args_as_json_str()}")
        elif isinstance(part, ToolReturnPart):
            lines.append(f"tool {part.tool_name} returned: {part.model_response_str()}")
    return lines


def _newest_turns(turns: list[list[str]], room: int) -> list[list[str]]:
    """The newest of ``turns`` whose lines, each held to at least ``MIN_LINE_SHARE``
    characters, fit in ``room`` (the newest one always)."""
    used = 0
    for index in range(len(turns) - 1, -1, -1):
        used += sum(min(len(line), MIN_LINE_SHARE) + 1 for line in turns[index])
        if used > room and index < len(turns) - 1:
            return turns[index + 1 :]
    return turns


def _within_share(lines: list[str], room: int) -> list[str]:
    """``lines`` scrubbed and held to ``room`` characters with their newlines: the lines
    shorter than a fair share whole, the longer ones cut to that share (the share what
    the shorter leave, split evenly), keeping their start and end."""
    room -= len(lines)
    share = room
    for done, length in enumerate(sorted(len(line) for line in lines)):
        share = room // (len(lines) - done)
        if length > share:
            break
        room -= length
    return [_cut_middle(line, max(0, share)) for line in lines]


def _cut_middle(line: str, chars: int) -> str:
    """``line`` scrubbed within ``chars``: whole, or its start and end around a mark of what
    was left out. Only what is kept is scrubbed (a pasted log of megabytes took seconds),
    with a margin, so a secret is found by its key even where the key is cut off."""
    if len(line) <= chars:
        return scrub_text(line)
    mark = CUT_MARK.format(chars=len(line))
    if chars < len(mark) + 2:
        return scrub_text(line[: chars + SCRUB_MARGIN])[:chars]
    start = (chars - len(mark)) * 2 // 3
    end = chars - len(mark) - start
    first = scrub_text(line[: start + SCRUB_MARGIN])[:start]
    last = scrub_text(line[-(end + SCRUB_MARGIN) :])[-end:] if end else ""
    return first + CUT_MARK.format(chars=len(line) - start - end) + last


TURN_HEADING: Final = "[turn {number}]"
TURN_AGAIN_HEADING: Final = (
    "[turn {number}, already in the earlier summary: read again for context]"
)


def turn_heading(number: int, *, again: bool) -> str:
    """The line before a turn's messages in a summarizer's input: ``again``, one the
    earlier summary covers."""
    return (TURN_AGAIN_HEADING if again else TURN_HEADING).format(number=number)


def _covered(events: Sequence[Event]) -> tuple[int, int]:
    previous = latest_compaction(events)
    ids = invocation_ids(events)
    start = previous.start_invocation if previous else (ids[0] if ids else 0)
    end = ids[-1] if ids else (previous.end_invocation if previous else 0)
    return start, end


_LABEL_RE: Final = re.compile(
    r"^[#>*_\s-]*(?:\w+\s+)?(?:summary|narrative|overview|recap)[*_\s]*(?:[:\u2013\u2014-][*_\s]*|$)",
    re.IGNORECASE,
)
"""A summary model's label or heading before its first words (``Summary:``, ``## Recap``)."""


def _opening(previous: EventCompaction | None) -> tuple[str, str]:
    """What an offline narrative says came first, with its label: the "Started with" (the
    first request) or "Earlier" of an earlier offline narrative, kept through every
    compaction; or, after a narrative of another kind (a summary model's), its first line
    that says something, without the model's own label, as what came "Earlier": the
    conversation did not start with the window's first request, nor with that summary."""
    if previous is None or not previous.compacted_content.strip():
        return "", ""
    content = previous.compacted_content
    for label in (STARTED_WITH, EARLIER):
        if content.startswith(label):
            opening = content.removeprefix(label).split("\n", 1)[0].split(". Latest")[0]
            label, opening = _restarted(label, opening)
            return label, _clip_words(opening)
    for line in content.strip().splitlines():
        words = _LABEL_RE.sub("", line.strip(), count=1).strip()
        if words and not line.startswith(COMPACTION_HEADER_START):
            label, opening = _restarted(EARLIER, words)  # whole: clipped, it read as prose
            return label, _clip_words(opening)
    return "", ""


def _restarted(label: str, opening: str) -> tuple[str, str]:
    """An opening that itself says how the conversation started (an offline session
    summary's ``Started with: ...`` or ``3 recent requests; first: "..."``, the earlier
    turns' summary when compaction was off) as "Started with", not "Earlier: Started
    with: ..."."""
    if label == EARLIER and opening.startswith(STARTED_WITH):
        return STARTED_WITH, opening.removeprefix(STARTED_WITH)
    if label == EARLIER and (quoted := OFFLINE_REQUESTS_RE.match(opening)):
        return STARTED_WITH, quoted[1]
    return label, opening


def _opening_sentence(label: str, opening: str) -> str:
    """The narrative's first line: the first request as it was written (listings and the
    resume offer quote it: a full stop put after it made a question read "...agent."), or
    what came "Earlier" as a sentence, ended with a stop unless clipped."""
    if label == STARTED_WITH:
        return f"{label}{opening.rstrip()}"
    opening = opening.rstrip(".!? ")
    return f"{label}{opening}{'' if opening.endswith('…') else '.'}"


QUOTED_REQUESTS: Final = 3
"""The offline narrative quotes the first words of the window's last few requests."""


def _quoted_requests(requests: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The requests the offline narrative may quote, scrubbed: the first (how the
    conversation started) and the last ``QUOTED_REQUESTS``. Only those are scrubbed: the
    patterns cost about a millisecond per 2 KB, and a window of 2,809 turns scrubbed every
    request (4.6 s) to quote four of them."""
    quoted = requests[:1] + requests[max(1, len(requests) - QUOTED_REQUESTS) :]
    return [(invocation, scrub_text(text[:QUOTED_CHARS])) for invocation, text in quoted]


QUOTED_CHARS: Final = 2_000
"""Of a request, what the offline narrative may quote from (its first words), with room
to scrub a secret there by its key: a 6 MB request took 4 s to scrub whole."""


class OfflineEventSummarizer(BaseEventsSummarizer):
    """Extractive and deterministic: how the conversation started, and the first words of
    the window's last requests (decisions, rules and paths are kept by ``Retained``)."""

    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        return self.summarize(events)

    def summarize(self, events: Sequence[Event]) -> Event | None:
        messages = [e for e in events if e.message is not None]
        if not messages:
            return None
        start, end = _covered(events)
        previous = latest_compaction(events)
        requests = _quoted_requests(
            [
                (e.invocation_id, text)
                for e in messages
                if previous is None or e.invocation_id > previous.end_invocation
                for text in user_prompts([e.message])  # type: ignore[list-item]
            ]
        )
        label, opening = _opening(previous)
        if not opening and requests:
            label, opening = STARTED_WITH, _first_words(requests[0][1])
        lines = [_opening_sentence(label, opening)] if opening else []
        if requests:
            shown = requests[-QUOTED_REQUESTS:]
            recent = dict.fromkeys(
                _clip(" ".join(t.split()[:8]), 70).rstrip(".!?;:, ") for _, t in shown
            )
            turns = turns_named(shown[0][0], shown[-1][0])  # the turns of those shown
            lines.append(f"{LATEST_REQUESTS_START}{turns}): {'; '.join(recent)}.")
        narrative = _clip_block("\n".join(lines), MAX_NARRATIVE_CHARS)
        return compaction_event(EventCompaction(start, end, narrative))


DEFAULT_PROMPT_TEMPLATE: Final = """\
You compact the history of a conversation between a user and an assistant that
designs LLM agents, so that the assistant can continue it from your summary alone.
Write, in at most 12 short lines:
- a narrative of what was done and where the work stands;
- every decision made (by the assistant or stated by the user);
- the open questions;
- every rule the user set ("always", "never", "must"), verbatim;
- every file path named by anyone, exactly as written.
Do not invent anything. The conversation:

{conversation_history}
"""


SESSION_SUMMARY_TEMPLATE: Final = (
    "Summarize this agent-design conversation in at most 8 short lines for resuming it later. "
    "Keep every file path, every decision and every rule the user set. Conversation:\n\n"
    "{conversation_history}\n"
)
"""The session summary's prompt (the listing's summary, not a compaction's narrative)."""

PROMPT_TEMPLATES: Final = (DEFAULT_PROMPT_TEMPLATE, SESSION_SUMMARY_TEMPLATE)
"""Every prompt the summary model is given: an answer echoing any of them is no summary,
whichever it was sent (a cache or a proxy that mixes up two requests answers with the
other)."""


class LlmEventSummarizer(BaseEventsSummarizer):
    """Asks a model (a pydantic-ai ``Model`` or model string) for the narrative."""

    def __init__(
        self,
        model: Model | str,
        prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
        max_request_chars: int | None = None,
    ) -> None:
        """``max_request_chars``: the token budget in characters, which the request (the
        prompt and the conversation) is held to, as a chat request is; None: no budget."""
        if PLACEHOLDER not in prompt_template:
            raise BadPromptTemplate(f"the summarizer prompt template must contain {PLACEHOLDER}")
        self.model = model
        self.prompt_template = prompt_template
        self.max_request_chars = max_request_chars
        self.sent_chars = 0
        """The last prompt this summarizer sent, as the wire carries it (0: none yet)."""

    def with_prompt_template(self, template: str) -> LlmEventSummarizer:
        return LlmEventSummarizer(self.model, template, self.max_request_chars)

    def within(self, max_request_chars: int | None) -> LlmEventSummarizer:
        """This summarizer, its requests held to ``max_request_chars``."""
        return LlmEventSummarizer(self.model, self.prompt_template, max_request_chars)

    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        if not any(e.message is not None for e in events):
            return None
        from pydantic_ai import Agent

        agent: Agent[None, str] = Agent(self.model, output_type=str)
        limit = summarizer_input_chars(self.max_request_chars, self.prompt_template)
        conversation = events_text(events, limit)
        prompt = self.prompt_template.replace(PLACEHOLDER, conversation)
        self.sent_chars = wire_chars(prompt)  # as the limit is applied (other scripts)
        result = await agent.run(prompt)
        if result.response.finish_reason == "length":
            raise CutSummary("the summary model's answer was cut at its token limit; not used")
        text = printable(result.output).strip()  # it is sent first in every request, and kept
        if not text:
            raise UnusableSummary("the summary model's answer was empty; not used")
        text = unwrapped(text, MAX_LLM_NARRATIVE_CHARS)  # a fence, JSON, a tag: what it wraps
        if contentless(text):
            raise UnusableSummary(
                f"the summary model's answer says nothing ({text[:60]!r}); not used"
            )
        if refused(text):
            raise UnusableSummary(
                f"the summary model refused ({_clip_words(text, 60)!r}); not used"
            )
        if len(text) > MAX_LLM_NARRATIVE_CHARS:
            raise RunawaySummary(
                f"the summary model answered {len(text):,} characters, over the cap of "
                f"{MAX_LLM_NARRATIVE_CHARS:,}; not used"
            )
        if echoed(text, self.prompt_template, prompt):
            raise EchoedSummary(
                "the summary model answered with its instructions or the conversation itself; "
                "not used"
            )
        if len(text) >= len(conversation):
            raise SummaryNotShorter(
                f"the summary model's answer ({len(text):,} characters) is not shorter than "
                f"the conversation it was given ({len(conversation):,}); not used"
            )
        start, end = _covered(events)
        return compaction_event(EventCompaction(start, end, text))


_SENT_LINE_RE: Final = re.compile(r"(?:user|assistant|tool call [\w.-]+|tool [\w.-]+ returned): ")
"""A line of the conversation as ``events_text`` sends it to a summarizer."""


ECHO_PREFIX_CHARS: Final = 48
"""How much of a line of a summarizer's instructions an answer repeating it is an echo."""


REFUSAL_RE: Final = re.compile(
    r"(?:unfortunately,? i\b|as an ai\b"
    r"|i(?:['\u2019]m| am) (?:unable|not able)\b"
    r"|i (?:cannot|can ?not|can['\u2019]t|won['\u2019]t|will not|must decline)\b"
    # in the conversation's language: a summary model often answers in it
    r"|no puedo\b|lamentablemente,? no puedo\b"
    r"|je ne (?:peux|suis pas en mesure)\b"
    r"|malheureusement,? je ne\b"
    r"|(?:leider )?kann ich (?:das |dies |diese[nrs]? )?(?:nicht|keine)\b"
    r"|ich kann (?:das |dies |diese[nrs]? |leider )?(?:nicht|keine)\b"
    r"|(?:eu )?n[ãa]o posso\b"
    r"|(?:purtroppo )?non posso\b"
    r"|к сожалению,? я не\b|я не могу\b"
    r"|我(?:无法|不能))",
    re.IGNORECASE,
)
"""How a model's refusal begins when it begins with no apology ("I cannot help with
that", "No puedo...", "我无法...")."""
APOLOGY_RE: Final = re.compile(
    r"(?:i apologi[sz]e\b|i(?:['\u2019]m| am) (?:so |very |really )?sorry\b|sorry\b"
    r"|lo siento\b|(?:je suis )?d[ée]sol[ée]e?\b|es tut mir leid\b|desculpe\b|lamento\b"
    r"|mi dispiace\b|извините\b|простите\b"
    r"|(?:很|非常)?抱歉|对不起|申し訳|すみません|죄송\w*)",
    re.IGNORECASE,
)
"""An apology word a refusal may begin with ("I'm sorry", "Lo siento", "很抱歉"), and a
summary too ("Sorry, the user...": a word the conversation used)."""
_REFUSING_AFTER_APOLOGY_RE: Final = re.compile(
    # what follows the apology at once: "but", the model itself, or a "no"
    r"[\s,.:;!\u2014\u2013\u3001\uff0c-]*"
    r"(?:but|pero|mais|aber|mas|ma|però|но|但|不过|i\b|yo\b|je\b|ich\b|eu\b|io\b|я\b|我"
    r"|no\b|não\b|non\b|nein\b|нет\b)",
    re.IGNORECASE,
)
"""How a refusal goes on from its apology: "Sorry, but", "Sorry, I", "Lo siento, no"."""
_INABILITY_RE: Final = re.compile(
    r"(?:\bi(?:['\u2019]m| am) (?:unable|not able)\b"
    r"|\bi (?:cannot|can ?not|can['\u2019]t|won['\u2019]t|will not|must decline|can only)\b"
    r"|\bnot something i\b|\bno (?:puedo|es algo que)\b|\bje ne (?:peux|suis pas)\b"
    r"|\bkann ich (?:das |dies )?nicht\b|\bich kann (?:das |dies |leider )?(?:nicht|keine)\b"
    r"|\bn[ãa]o posso\b|\bnon posso\b"
    r"|\bне могу\b|无法|不能|できません|できかねます|수 없)",  # noqa: RUF001
    re.IGNORECASE,
)
"""The model's own inability, anywhere in a short answer that began with an apology."""
MAX_REFUSAL_CHARS: Final = 400
"""A longer answer that begins so may go on with a summary: it is not taken for a refusal."""


PLACEHOLDER_ANSWERS: Final = frozenset(
    {"null", "none", "nil", "n/a", "na", "tbd", "todo", "empty", "nothing", "no summary"}
)
"""Answers that stand for no summary at all."""


_ANSWER_LABEL_RE: Final = re.compile(r"[^\n:]{1,40}:")
"""A short label that an answer may open with (``Summary:``, ``**Summary:**``)."""
_HEADING_LINE_RE: Final = re.compile(
    r"#{1,6}(?:\s.*)?"  # a Markdown heading
    r"|[*_]{2}[^*_]+[*_]{2}:?"  # a bold line: a heading in all but name
    r"|.*:[*_ ]*"  # a label with nothing after it (``Decisions:``)
    r"|[-*+=_#>|`~\s]*"  # a rule, an empty bullet or quote
)
"""A line of a summary model's answer that only heads what should follow it."""


_NOTHING_TO_SUMMARIZE_RE: Final = re.compile(
    r"(?:(?:it (?:appears|seems)(?: that)? |(?:the |this )?(?:conversation|history|input"
    r"|transcript|chat) (?:is|was) (?:empty|blank),? (?:so |and )?)?"
    r"(?:there (?:is|was|are|were)(?: not|n't)?|there's"
    r"|i (?:do not|don't|did not|didn't|cannot|can't)"
    r" (?:see|find|have)|i (?:have|see|found)|we have|(?:the|this) (?:conversation|history"
    r"|input|transcript|chat) (?:has|had|contains|holds|gives))\s+)?"
    r"(?:nothing|no|not enough|not much|anything|any|none)\b[^.;:!?]{0,40}?"
    r"\b(?:to|worth|that (?:can|could|needs? to|should) be|i can|for me to) summari[sz](?:e|ed|ing)"
    r"(?:\s+(?:yet|here|so far|now|at this (?:time|point)|in (?:it|this conversation)))*"
    r"|(?:the |this )?(?:conversation|history|input|transcript|chat)(?: provided| given)?"
    r" (?:is|was|appears|seems)(?: to be)? (?:empty|blank|missing)"
    r"|(?:an? )?empty (?:conversation|history|input|transcript|chat)"
    r"|no (?:conversation|content|messages?|history|input|transcript|text)"
    r"(?: (?:was |were )?(?:provided|given|yet|here|available|found|to review|shared))*"
    r"|no summary(?: is)?(?: (?:available|needed|necessary|possible|required))?"
)
"""An answer (flattened: lower case, one space, no closing stop) that says there is
nothing to summarize, or that the conversation is empty: no summary, whatever the
conversation holds. Matched whole, so that a short summary naming nothing in passing
("The user greeted us; no decisions yet.") is kept."""


def summarizer_input_chars(max_request_chars: int | None, template: str) -> int:
    """The conversation's characters in a summary request held to ``max_request_chars``
    (the wire's share kept, ``template`` around it), within ``MIN_SUMMARIZER_INPUT_CHARS``-
    ``MAX_SUMMARIZER_INPUT_CHARS``: a model with the chat model's window refused the
    window of a small budget sent whole."""
    if max_request_chars is None:
        return MAX_SUMMARIZER_INPUT_CHARS
    room = max_request_chars - max_request_chars // WIRE_HEADROOM - wire_chars(template)
    return max(MIN_SUMMARIZER_INPUT_CHARS, min(MAX_SUMMARIZER_INPUT_CHARS, room))


def says_nothing_to_summarize(answer: str) -> bool:
    """Whether ``answer`` (after a short label such as ``Summary:``) only says that there
    is nothing to summarize (``There is nothing to summarize.``, ``No conversation was
    provided.``, ``The conversation is empty.``)."""
    text = answer.strip()
    label = _ANSWER_LABEL_RE.match(text)
    said = [text, text[label.end() :]] if label is not None else [text]
    return any(_NOTHING_TO_SUMMARIZE_RE.fullmatch(_flat_answer(part)) for part in said)


def _flat_answer(text: str) -> str:
    """``text`` as ``_NOTHING_TO_SUMMARIZE_RE`` reads it: lower case, straight quotes, one
    space between words, without the emphasis, quotes and stops around it."""
    flat = " ".join(text.replace("\u2019", "'").lower().split())
    return flat.strip(".!`*_\"' ")


_ANNOUNCEMENT_RE: Final = re.compile(
    r"(?:(?:sure|okay|ok|certainly|of course|absolutely|alright|all right|done|got it"
    r"|understood|no problem)[!.,]*(?: |$))*"
    r"(?:(?:here(?: is|'s| are| comes)|below is|(?:i(?:'ve| have)|i) (?:summari[sz]ed|written"
    r"|prepared|condensed)|this is)"
    r"(?: (?:a|an|the|my|your))?(?: (?:brief|short|concise|detailed|quick|compact|updated))*"
    r" ?(?:summary|recap|overview|summari[sz]ation|conversation|chat|discussion)?"
    r"(?: of (?:the|this|our|your) (?:conversation|chat|discussion|history|transcript|turns))?"
    r"(?: (?:so far|below|above|for you))*)?"
)
"""An answer (flattened) that only acknowledges, or announces a summary that does not
follow: "Sure! Here is the summary.", "I have summarized the conversation.", "Okay."."""


def contentless(answer: str) -> bool:
    """Whether ``answer`` holds no summary: no word of two letters or more (``...``,
    ``N/A``, ``[]``), a placeholder (``null``, ``TBD``), a lone line that only
    announces one (``Here is the summary:``), headings only (``# Summary`` /
    ``## Decisions`` / ``## Files``, with nothing under them); after a short label too
    (``Summary: N/A``, ``**Summary:**`` then ``None.``)."""
    words = re.findall(r"[^\W\d_]{2,}", answer)
    flat = answer.strip().strip(".!`*_\"' ").lower()
    lone_heading = "\n" not in answer.strip() and answer.rstrip().endswith(":")
    headings_only = all(_HEADING_LINE_RE.fullmatch(line.strip()) for line in answer.splitlines())
    if not words or flat in PLACEHOLDER_ANSWERS or lone_heading or headings_only:
        return True
    if says_nothing_to_summarize(answer) or _ANNOUNCEMENT_RE.fullmatch(_flat_answer(answer)):
        return True
    label = _ANSWER_LABEL_RE.match(answer.strip())
    if label is None:
        return False
    rest = unwrapped(answer.strip()[label.end() :])  # ``Summary: (empty)``
    rest_words = re.findall(r"[^\W\d_]{2,}", rest)
    return not rest_words or rest.strip(".!`*_\"' \t\n").lower() in PLACEHOLDER_ANSWERS


def refused(answer: str) -> bool:
    """Whether ``answer`` is a refusal rather than a summary: short, and beginning (after
    any quote, bullet or emphasis) as a refusal does, or with an apology that goes on as
    one (``but``, the model itself, its inability, or nothing more): a summary that
    begins with an apology word ("Sorry, the user...") is kept."""
    head = answer.lstrip(" \t\n\"'*_#>-`")
    if len(answer) > MAX_REFUSAL_CHARS:
        return False
    if REFUSAL_RE.match(head):
        return True
    apology = APOLOGY_RE.match(head)
    if apology is None:
        return False
    rest = head[apology.end() :]  # "Sorry, the user..." is a summary; "Sorry, but I..." is not
    words = re.findall(r"[^\W\d_]{2,}", rest)  # a run of CJK letters is one
    return (
        (len(words) < 3 and sum(map(len, words)) < 8)  # the apology and little else
        or _REFUSING_AFTER_APOLOGY_RE.match(rest) is not None
        or _INABILITY_RE.search(rest) is not None
    )


def echoed(answer: str, template: str, prompt: str) -> bool:
    """Whether ``answer`` repeats a line or a sentence of the summarizer's instructions
    (``template``, or any other of ``PROMPT_TEMPLATES``), or copies lines of the
    conversation as it was sent (``user: ...``; two, or one that is half the answer),
    whatever it begins with: an echo, which would become the next summary's input, the
    listing's summary and the resumed model's instructions. A summary that begins as the
    earlier one did is no echo. A long line of instructions counts from its first
    ``ECHO_PREFIX_CHARS`` characters (an answer cut there, or going on otherwise, is as
    much an echo)."""
    if any(
        len(line) >= 25 and line[:ECHO_PREFIX_CHARS] in answer
        for line in _instruction_lines((template, *PROMPT_TEMPLATES))
    ):
        return True
    sent = {line for line in prompt.splitlines() if _SENT_LINE_RE.match(line)}
    copied = [line for line in answer.splitlines() if line.strip() in sent]
    if len(copied) >= 2:
        return True
    return bool(copied) and 2 * len(copied[0]) >= len(answer)


@lru_cache(maxsize=16)
def _instruction_lines(templates: tuple[str, ...]) -> tuple[str, ...]:
    """The lines of the templates' instructions (what comes before the conversation),
    and the sentences of each: the session summary's prompt is one line of sentences, and
    an answer repeating its second one alone is as much an echo."""
    lines: list[str] = []
    for template in templates:
        for line in template.split(PLACEHOLDER)[0].splitlines():
            line = line.strip()
            lines.append(line)
            lines.extend(s.strip() for s in re.split(r"(?<=[.;:])\s+", line)[1:])
    return tuple(dict.fromkeys(lines))


def turns_named(first: int, last: int) -> str:
    """``turn 3`` or ``turns 1-4``."""
    return f"turn {first}" if first == last else f"turns {first}-{last}"


def _clip_block(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- applying a summary ---------------------------------------------------------------


def estimate_tokens(text_chars: int) -> int:
    return (text_chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def finish_compaction(
    window: Window, summarized: Event | None, known_secrets: tuple[str, ...] = ()
) -> EventCompaction | None:
    """The compaction to keep: the summarizer's narrative over the window's exact range,
    with everything retained, ``known_secrets`` (the session's) replaced in it: a summary
    model may echo one it was never sent (the API key it was called with). None if the
    summarizer skipped the window.

    Raises ``SummaryTooLong`` if the result is not shorter than what it replaces.
    """
    compaction = _compaction_of(window, summarized, known_secrets)
    if compaction is None:
        return None
    replaced = sum(_event_chars(e) for e in window.events)
    produced = len(render_compaction(compaction))
    if produced >= replaced:
        raise SummaryTooLong(
            f"the summary of {turns_named(window.start_invocation, window.end_invocation)} "
            f"({produced} characters) is not shorter than what it replaces ({replaced})"
        )
    return compaction


def offline_fallback(window: Window, compaction: EventCompaction) -> EventCompaction | None:
    """``compaction`` (a summary model's, of ``window``) with the offline summarizer's
    narrative in place of the model's: what is kept if the model's would not make the
    next request smaller (a wordy summary). None if the offline one is no shorter."""
    summarized = OfflineEventSummarizer().summarize(window.events)
    if summarized is None or summarized.compaction is None:
        return None
    narrative = normalize_narrative(scrub_text(summarized.compaction.compacted_content))
    if len(narrative) >= len(compaction.compacted_content):
        return None
    return dataclasses.replace(compaction, compacted_content=narrative)


def offline_compaction(window: Window) -> EventCompaction | None:
    """``window`` compacted at once by the offline summarizer (deterministic, no model),
    for turns that leave the request now. Not held to be shorter than what it replaces,
    as ``finish_compaction`` is: it is what keeps the turns it covers from vanishing
    (the request carries it within its share of the budget). None for an empty window."""
    return _compaction_of(window, OfflineEventSummarizer().summarize(window.events))


def _compaction_of(
    window: Window, summarized: Event | None, known_secrets: tuple[str, ...] = ()
) -> EventCompaction | None:
    if summarized is None or summarized.compaction is None:
        return None
    return EventCompaction(
        window.start_invocation,
        window.end_invocation,
        # scrubbed: a summary model's answer is sent in the model's requests as it is
        normalize_narrative(scrub_text(summarized.compaction.compacted_content, known_secrets)),
        retained_of(window.events),
    )


def _event_chars(event: Event) -> int:
    if event.compaction is not None:
        return len(render_compaction(event.compaction))
    assert event.message is not None
    return message_chars(event.message)


def with_compaction(events: Sequence[Event], compaction: EventCompaction) -> list[Event]:
    """``events`` with ``compaction`` appended (what a session service would store)."""
    return [*events, compaction_event(compaction)]
