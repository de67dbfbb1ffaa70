"""A progress bar on stderr, drawn only when stderr is a terminal (never in pipes or CI logs)."""

from __future__ import annotations

import sys
import time

from formats.textfile import terminal_safe


class Progress:
    def __init__(self, total: int, label: str = "", stream=None, enabled: bool | None = None):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.perf_counter()
        self._drawn = 0.0

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        now = time.perf_counter()
        if self.enabled and (now - self._drawn > 0.1 or self.done >= self.total):
            self._drawn = now
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            rate = self.done / max(now - self.start, 1e-9)
            left = max(self.total - self.done, 0) / rate if rate > 0 else 0.0
            eta = f"ETA {int(left) // 60:d}:{int(left) % 60:02d}"
            note = terminal_safe(note, newlines=False)[:30]   # a name, say: shown, never run
            self.stream.write(f"\r{self.label} [{'█' * filled}{'·' * (width - filled)}] "
                              f"{self.done}/{self.total}  {rate:6.0f}/s  {eta}  {note:<30}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()
