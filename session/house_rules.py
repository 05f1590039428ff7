"""House rules said in a few words ("Be concise.", "Tests go in tests/."): a scan over one
sentence's words, in linear time, beside the rule patterns of ``session/compaction.py``."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Final

_Shape = Callable[[list[str]], bool]

MOMENT_WORDS: Final = (
    "this", "now", "yet", "today", "here", "above", "below", "you know", "I gave", "I sent",
    "I pasted",
)
"""What names something of the moment: a sentence holding one is a request for this turn,
not a standing rule ("Use all cores for this build", "Tests go in tests/ for now")."""
_MOMENT: Final = frozenset(w.lower() for w in MOMENT_WORDS if " " not in w)
_MOMENT_PAIRS: Final = frozenset(tuple(w.lower().split()) for w in MOMENT_WORDS if " " in w)

_STYLE_ADJECTIVES: Final = frozenset(
    (
        "concise", "brief", "terse", "succinct", "formal", "informal", "polite", "direct",
        "precise", "explicit", "specific", "thorough", "consistent", "professional",
        "friendly", "casual", "neutral", "objective", "blunt", "candid",
    )
)
"""How to be, as a standing style ("Be concise."); not a state of the moment ("Be
careful.", "Be right back.")."""
_HABITS: Final = frozenset(
    (
        "apologizing", "apologising", "hedging", "rambling", "moralizing", "moralising",
        "lecturing", "speculating", "guessing", "repeating", "flattering", "editorializing",
    )
)
"""Habits of the assistant's replies a bare "Stop ..." ends for good ("Stop apologizing."),
unlike a task ("Stop the server.", "Stop it.")."""
_THINGS: Final = frozenset(
    (
        "names", "functions", "classes", "methods", "tests", "commits", "messages", "comments",
        "docstrings", "variables", "files", "modules", "lines", "imports", "errors",
        "exceptions", "logs", "answers", "replies", "responses", "prs", "branches",
        "endpoints", "migrations", "constants", "types", "fixtures", "scripts", "helpers",
    )
)
"""Kinds of things of code or replies a norm is said of ("Functions should be short.")."""
_NORM_VERBS: Final = {
    "should": None, "shall": None, "go": frozenset(("in", "into", "under", "to", "inside")),
    "live": frozenset(("in", "under", "inside")), "belong": frozenset(("in", "to", "under")),
    "need": frozenset(("to",)),
}
"""A norm's verb, and the words one of which must follow it ("Tests go in ...", not "Tests
go green"; "need to", not "need fixing")."""
_FORMATTED: Final = frozenset(
    (
        "dates", "times", "timestamps", "datetimes", "numbers", "amounts", "prices", "money",
        "units", "measurements", "durations", "sizes", "currencies",
    )
)
"""What a bare "<things> in <format>" sets the format of ("Dates in ISO 8601.")."""
_TONE: Final = frozenset(("tone", "style", "language", "voice", "wording", "register"))
_CONVENTION: Final = frozenset(("convention", "standard", "style"))
_NOT_A_CONVENTION: Final = frozenset(
    (
        "unclear", "broken", "outdated", "wrong", "bad", "fine", "ok", "okay", "good", "great",
        "messy", "inconsistent", "different", "changing", "not", "weird", "confusing",
        "undocumented", "unknown", "missing", "gone", "nice", "strict", "old", "new", "odd",
    )
)
"""What "Our convention is ..." says of the convention, not what it is."""
_DETERMINERS: Final = frozenset(
    (
        "a", "an", "the", "my", "our", "your", "his", "her", "their", "its", "these", "those",
        "that", "this", "it", "them", "him", "some", "few", "many", "several", "most", "such",
        "one", "two", "three", "any", "which", "what",
    )
)
"""Words that make what follows a thing at hand ("Prefer the second one", "Ask him")."""
_EVERY: Final = frozenset(("every", "each", "all"))
_EVERY_NOT_A_THING: Final = frozenset(
    ("of", "together", "down", "up", "out", "at", "in", "over", "again", "the", "my", "these")
)
_FILLERS: Final = frozenset(("please", ",", "also", "and", "ok", "okay", "oh", "so"))
_FROM_NOW: Final = (
    ("from", "now", "on"), ("going", "forward"), ("henceforth",), ("from", "here", "on")
)
_CONTRAST: Final = (("not",), ("never",), ("instead", "of"), ("rather", "than"))

_OPENING_RE: Final = re.compile(
    r"\W*(?:(?:please|also|and|ok|okay|oh|so)\b\W*)?([\w'/.+-]+)\W*([\w'/.+-]*)", re.IGNORECASE
)
"""A sentence's first two words (after a "please"), read without splitting the rest."""
CUES: Final = re.compile(
    r"concise|brief|terse|succinct|formal|polite|direct|precise|explicit|specific|thorough"
    r"|consistent|professional|friendly|casual|neutral|objective|blunt|candid"
    r"|stop|prefer|indent|should|shall|\bgo\b|belong|\blive\b|\bneed\b|ask|confirm|keep"
    r"|convention|standard|style|\blet|only|target|\bnot\b|never|instead\s+of|rather\s+than"
    r"|every|each|all"
    r"|\sin\s",
    re.IGNORECASE,
)
"""A word each house rule holds (its shape needs it): ``is_house_rule`` reads no sentence
without one, so a text without any holds none (``may_retain`` asks this too)."""
_WORD_RE: Final = re.compile(r"[\w'/.+-]+|,")
"""A word (a path, a version, ``f-strings``, ``let's``) or a comma: one character class,
so a sentence is split in one pass."""


def is_house_rule(sentence: str) -> bool:
    """Whether ``sentence`` (one, not a question) is a standing house rule said in a few
    words: a style ("Be concise."), a habit ended ("Stop apologizing."), a preference
    ("Prefer f-strings.", "Log with structlog, not print."), a layout or a norm ("Indent
    with 2 spaces.", "Tests go in tests/.", "Functions should be short."), a check first
    ("Ask before deleting files."), a tone, a convention, a target or a format; never one
    naming something of the moment (``MOMENT_WORDS``) or a thing at hand ("Prefer it.",
    "The tests should pass.", "Stop the server.")."""
    opening = _OPENING_RE.match(sentence)
    if opening is None:
        return False
    shapes = _shapes_for(opening[1].lower(), opening[2].lower())
    if not shapes:
        return False
    words = _words(sentence)
    if not words or not any(shape(words) for shape in shapes) or _of_the_moment(words):
        return False
    return CUES.search(sentence) is not None  # last: the dearest test, and rarely reached


def _shapes_for(first: str, second: str) -> tuple[_Shape, ...]:
    """The shapes a sentence beginning with ``first`` and ``second`` may have (most
    sentences are told apart by them alone, before they are split into words)."""
    if first in ("the", "our"):
        named = second in _CONVENTION or second in ("house", "coding", "code")
        return (_convention,) if named else ()
    shapes = _BY_OPENING.get(first, ())
    return (*shapes, _norm) if first in _THINGS or second in _THINGS else shapes


def _words(sentence: str) -> list[str]:
    """The sentence's words, lower case, without a leading or trailing "please" and
    the closing stops (a path's own slash stays: ``tests/``)."""
    words = _WORD_RE.findall(sentence.lower())
    if words:
        words[-1] = words[-1].rstrip(".")
        if not words[-1]:
            words.pop()
    start, end = 0, len(words)
    while start < end and words[start] in _FILLERS:
        start += 1
    while end > start and words[end - 1] in ("please", ","):
        end -= 1
    return words[start:end]


def _of_the_moment(words: list[str]) -> bool:
    """Whether ``words`` name something of the moment ("from now on" is no "now")."""
    return any(
        w in _MOMENT and not (w == "now" and words[at - 1 : at + 2] == ["from", "now", "on"])
        for at, w in enumerate(words)
    ) or any(
        pair in _MOMENT_PAIRS for pair in itertools.pairwise(words)
    )


def _open(word: str) -> bool:
    """A word that begins a kind of thing, not a thing at hand."""
    return word not in _DETERMINERS and word != ","


def _style(words: list[str]) -> bool:
    """ "Be concise.", "Be brief in your answers.", "Be more direct and precise." """
    if words[0] != "be":
        return False
    at = 1
    while at < len(words) and words[at] in ("more", "always", "very"):
        at += 1
    if at == len(words) or words[at] not in _STYLE_ADJECTIVES:
        return False
    at += 1
    while at + 1 < len(words) and words[at] in ("and", ",") and words[at + 1] in _STYLE_ADJECTIVES:
        at += 2
    rest = words[at:]
    if not rest:
        return True
    return rest[0] in ("in", "with", "about") and len(rest) <= 4 and all(
        w not in _DETERMINERS or w == "your" for w in rest[1:]
    )


def _habit(words: list[str]) -> bool:
    """ "Stop apologizing." (two words: three or more are ``_RULE_RE``'s)."""
    return len(words) == 2 and words[0] == "stop" and words[1] in _HABITS


def _prefer(words: list[str]) -> bool:
    """ "Prefer f-strings.", "Prefer early returns." (a kind, briefly)."""
    return words[0] == "prefer" and 2 <= len(words) <= 4 and all(map(_open, words[1:]))


def _indent(words: list[str]) -> bool:
    """ "Indent with 2 spaces.", "Use 2-space indentation." """
    if words[0] == "indent":
        return len(words) >= 3 and words[1] in ("with", "using", "by") and _open(words[2])
    return words[0] == "use" and len(words) == 3 and words[2] == "indentation" and _open(words[1])


def _norm(words: list[str]) -> bool:
    """ "Functions should be short.", "Tests go in tests/.", "Commit messages should ..." """
    for at in (0, 1):
        if len(words) > at + 2 and words[at] in _THINGS and words[at + 1] in _NORM_VERBS:
            followed = _NORM_VERBS[words[at + 1]]
            after = words[at + 2]
            if (followed is None and after != "have") or (followed and after in followed):
                return at == 0 or _open(words[0])
    return False


def _ask_first(words: list[str]) -> bool:
    """ "Ask before deleting files.", "Ask me first before running migrations." """
    if words[0] not in ("ask", "confirm"):
        return False
    at = 1
    while at < len(words) and words[at] in ("me", "us", "first"):
        at += 1
    return words[at : at + 1] == ["before"] and words[at + 1 : at + 2] != [] and (
        words[at + 1].endswith("ing")
    )


def _tone(words: list[str]) -> bool:
    """ "Keep the tone formal.", "Keep your wording plain." """
    rest = words[2:] if len(words) > 1 and words[1] in ("the", "your") else words[1:]
    return (
        words[0] == "keep"
        and len(rest) in (2, 4)
        and rest[0] in _TONE
        and rest[1] not in ("down", "up", "in", "out", "going", "for", "to")
        and (len(rest) == 2 or rest[2] == "and")
    )


def _contrast(words: list[str]) -> bool:
    """ "Log with structlog, not print.", "Use tabs instead of spaces." (each side a kind)."""
    if words[0] not in ("use", "log", "write", "prefer", "pick", "choose"):
        return False
    rest = words[1:]
    if words[0] in ("log", "write") and rest and rest[0] in ("with", "using", "in"):
        rest = rest[1:]
    for at in range(1, min(len(rest), 5)):
        for contrast in _CONTRAST:
            end = at + len(contrast)
            if tuple(rest[at:end]) == contrast or (
                rest[at] == "," and tuple(rest[at + 1 : end + 1]) == contrast
            ):
                after = rest[end + (rest[at] == ",") :]
                return (
                    _open(rest[0])
                    and 1 <= len(after) <= 4
                    and _open(after[0])
                    and "," not in rest[:at]
                )
    return False


def _every(words: list[str]) -> bool:
    """ "Add a docstring to every function.", "Put type hints on all functions." """
    if words[0] not in ("add", "include", "put", "write", "give", "attach") or len(words) < 4:
        return False
    if words[1] in ("it", "them", "this", "that"):
        return False
    for at in range(2, min(len(words) - 2, 8)):
        if words[at] in ("to", "on", "in", "for", "across") and words[at + 1] in _EVERY:
            return words[at + 2] not in _EVERY_NOT_A_THING and len(words) <= at + 5
    return False


def _convention(words: list[str]) -> bool:
    """ "Our convention is tabs.", "The house style is black." """
    rest = words[1:]
    if words[0] not in ("our", "the") or not rest:
        return False
    if rest[0] in ("house", "coding", "code") and len(rest) > 1:
        rest = rest[1:]
    elif words[0] == "the" and rest[0] != "convention":
        return False  # "the style is ...": of something at hand
    return (
        len(rest) >= 3
        and rest[0] in _CONVENTION
        and rest[1] == "is"
        and rest[2] not in _NOT_A_CONVENTION
        and len(rest) <= 8
    )


def _lets_from_now(words: list[str]) -> bool:
    """ "Let's use tabs from now on." (without "from now on": a choice of the moment)."""
    opens = words[0] in ("let's", "lets") or words[:2] == ["let", "us"]
    return opens and len(words) >= 4 and any(
        tuple(words[-len(end) :]) == end for end in _FROM_NOW
    )


def _only(words: list[str]) -> bool:
    """ "Use only the standard library." """
    return len(words) >= 3 and words[:2] == ["use", "only"]


def _target(words: list[str]) -> bool:
    """ "Target Python 3.11." (a platform and its version)."""
    return (
        words[0] == "target"
        and len(words) in (3, 4)
        and _open(words[1])
        and words[2][:1].isdigit()
    )


def _format(words: list[str]) -> bool:
    """ "Dates in ISO 8601.", "Timestamps in UTC." (the whole sentence)."""
    return (
        2 < len(words) <= 5
        and words[0] in _FORMATTED
        and words[1] == "in"
        and all(map(_open, words[2:]))
    )


_BY_OPENING: Final[dict[str, tuple[_Shape, ...]]] = {
    "be": (_style,),
    "stop": (_habit,),
    "prefer": (_prefer, _contrast),
    "indent": (_indent,),
    "use": (_indent, _contrast, _only),
    "ask": (_ask_first,),
    "confirm": (_ask_first,),
    "keep": (_tone,),
    "log": (_contrast,),
    "write": (_contrast, _every),
    "pick": (_contrast,),
    "choose": (_contrast,),
    **dict.fromkeys(("add", "include", "put", "give", "attach"), (_every,)),
    **dict.fromkeys(("let's", "lets", "let"), (_lets_from_now,)),
    "target": (_target,),
    **dict.fromkeys(_FORMATTED, (_format,)),
}
"""The shapes a sentence may have by its first word (a norm's and a convention's subject
are ``_shapes_for``'s)."""
