"""The child's events on their way to the grader: each encoded into a frame (a value that
cannot be sent becomes an ``Unsupported``), held until the next small frame, and written to the
result pipe. Imported by the sandbox server (the standard library and ``frames`` only).
"""

from __future__ import annotations

import os

from . import frames, protocol

PIPE_SIZE = 65536           # Linux's default pipe buffer


class Emitter:
    """Writes events to the result pipe. A value that cannot be encoded (a student object that
    raises from ``__iter__``) or that would make the frame too big becomes an Unsupported, the
    biggest first, so the rest of the event still arrives.

    An event is written with the small frame that follows it (the next ``start`` or ``need``)
    or by ``flush``: one write where there were two, and the grader woken once. The stream's
    bytes are the same, and what the grader relies on holds: a ``start`` is in the pipe before
    the student code it announces runs, and a ``need`` before the child waits for its case
    (both are written at once, with whatever waited). Between an event and the small frame
    that carries it no student code runs (encoding a student's value, which can, happens
    before the event is held)."""

    def __init__(self, fd: int, limit: int):
        self.fd, self.limit = fd, limit
        self._held: list[bytes] = []

    def __call__(self, event: dict) -> None:
        self._held.append(self._encode(event))

    def small(self, event: str, step: int, case: int | None = None) -> None:
        """A start or need event, as a small frame (``frames.small_event``), written now with
        the events held before it."""
        self._held.append(frames.framed(frames.small_event(event, step, case)))
        self.flush()

    def flush(self) -> None:
        held, self._held = self._held, []
        if not held:
            return
        if not os.get_blocking(self.fd):             # the student's own doing: wait, not fail
            os.set_blocking(self.fd, True)
        if sum(map(len, held)) <= PIPE_SIZE:
            frames.write_all(self.fd, b"".join(held))
        else:                                         # (a large frame is not copied to join it)
            for data in held:
                frames.write_all(self.fd, data)

    def _try(self, event: dict) -> bytes | None:
        try:
            body = frames.encode(event)
        except Exception:                 # FrameTooLarge, or anything a student object raised
            return None
        return frames.framed(body) if len(body) <= self.limit else None

    @staticmethod
    def _size(value) -> float:
        try:
            return len(frames.encode(value))
        except Exception:
            return float("inf")

    def _encode(self, event: dict) -> bytes:
        data = self._try(event)
        if data is not None:
            return data
        key = "values" if event.get("event") == protocol.VALUES else "value"
        parts = dict(event["values"]) if key == "values" else {"value": event.get("value")}
        sizes = {name: self._size(value) for name, value in parts.items()}
        for name in sorted(sizes, key=sizes.get, reverse=True):
            reason = "could not be sent" if sizes[name] == float("inf") else "too large to send"
            parts[name] = frames.Unsupported(f"{frames.type_name(parts[name])} {reason}")
            trial = {**event, "values": parts} if key == "values" else {**event, "value": parts["value"]}
            data = self._try(trial)
            if data is not None:
                return data
        raise frames.FrameTooLarge("an event too large even without its values")
