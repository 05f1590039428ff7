"""``EncodedMessages``: history messages in the session file's form, scrubbed and encoded
once each, when they join the history, and kept joined in a few large chunks.

A save splices the chunks into the file with one ``writev`` (``session/manager.py``):
it neither re-encodes nor touches the messages one by one, so its cost over the raw
write does not grow with the number of messages.

Layout: ``chunks[i]`` is ``b",".join`` of the encodings of ``sizes[i]`` (their byte
lengths); the chunks joined with ``b","`` are the inside of the JSON array. Appending
merges a small last chunk with the new one (at most ``MERGE_BELOW`` bytes copied), so
a history built turn by turn has few chunks; slicing copies only the chunk it cuts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate

import orjson

from session.models import JsonDict
from session.redaction import scrub_json

MERGE_BELOW = 64 * 1024
"""A last chunk smaller than this is merged with the next appended one."""


@dataclass(frozen=True)
class EncodedMessages:
    json: tuple[JsonDict, ...] = ()
    """The messages, scrubbed, as JSON-ready data."""
    chunks: tuple[bytes, ...] = ()
    sizes: tuple[tuple[int, ...], ...] = ()
    """The byte length of each message's encoding, chunk by chunk."""
    known_secrets: frozenset[str] = frozenset()
    """The values every message was scrubbed of (besides credential-looking strings)."""

    @classmethod
    def scrub(cls, messages: Iterable[JsonDict], known_secrets: Iterable[str]) -> EncodedMessages:
        """``messages`` scrubbed of ``known_secrets`` and credential-looking strings, encoded."""
        secrets = frozenset(known_secrets)
        clean: list[JsonDict] = scrub_json(list(messages), secrets)
        return cls.of(clean, secrets)

    @classmethod
    def of(cls, messages: Sequence[JsonDict], known_secrets: frozenset[str]) -> EncodedMessages:
        """``messages``, already scrubbed of ``known_secrets``, encoded as they are."""
        if not messages:
            return cls(known_secrets=known_secrets)
        encoded = [orjson.dumps(message) for message in messages]
        sizes = tuple(map(len, encoded))
        return cls(tuple(messages), (b",".join(encoded),), (sizes,), known_secrets)

    def nbytes(self) -> int:
        """The bytes of the inside of the JSON array (``joined``'s length)."""
        return sum(map(len, self.chunks)) + max(0, len(self.chunks) - 1)

    def message_sizes(self) -> Iterator[int]:
        """Each message's encoding's length, in order."""
        for chunk_sizes in self.sizes:
            yield from chunk_sizes

    def __len__(self) -> int:
        return len(self.json)

    def __add__(self, other: EncodedMessages) -> EncodedMessages:
        """Both, in order; scrubbed of the values both were scrubbed of (an empty one, with
        no message, has no say)."""
        if not other.chunks:
            return self
        if not self.chunks:
            return other
        chunks, sizes = self.chunks, self.sizes
        if len(chunks[-1]) < MERGE_BELOW:
            merged = chunks[-1] + b"," + other.chunks[0]
            chunks = (*chunks[:-1], merged, *other.chunks[1:])
            sizes = (*sizes[:-1], sizes[-1] + other.sizes[0], *other.sizes[1:])
        else:
            chunks, sizes = (*chunks, *other.chunks), (*sizes, *other.sizes)
        secrets = self.known_secrets & other.known_secrets
        return EncodedMessages((*self.json, *other.json), chunks, sizes, secrets)

    def __getitem__(self, index: slice) -> EncodedMessages:
        """Messages ``start`` up to ``stop`` (a slice without a step)."""
        if index.step not in (None, 1):
            raise ValueError("EncodedMessages slices take no step")
        start, stop, _ = index.indices(len(self.json))
        stop = max(start, stop)
        if (start, stop) == (0, len(self.json)):
            return self
        chunks: list[bytes] = []
        sizes: list[tuple[int, ...]] = []
        first = 0  # index of the chunk's first message
        for chunk, chunk_sizes in zip(self.chunks, self.sizes, strict=True):
            last = first + len(chunk_sizes)
            lo, hi = max(start, first) - first, min(stop, last) - first
            if lo < hi:
                if (lo, hi) == (0, len(chunk_sizes)):
                    chunks.append(chunk)
                else:
                    ends = [0, *accumulate(size + 1 for size in chunk_sizes)]
                    chunks.append(chunk[ends[lo] : ends[hi] - 1])
                sizes.append(chunk_sizes[lo:hi])
            first = last
        json = self.json[start:stop]
        return EncodedMessages(json, tuple(chunks), tuple(sizes), self.known_secrets)

    def parts(self) -> Iterator[bytes]:
        """The inside of the JSON array, as buffers to write one after the other."""
        for i, chunk in enumerate(self.chunks):
            if i:
                yield b","
            yield chunk

    def joined(self) -> bytes:
        return b"".join(self.parts())

    def encodings(self) -> Sequence[bytes]:
        """Each message's encoding (for tests and checks; a save uses ``parts``)."""
        out: list[bytes] = []
        for chunk, chunk_sizes in zip(self.chunks, self.sizes, strict=True):
            at = 0
            for size in chunk_sizes:
                out.append(chunk[at : at + size])
                at += size + 1
        return out
