"""What a test's child process needs from its parent: Ctrl-C as a terminal sends it.

A test run started in the background (``nohup make test &``, a CI runner's shell) may inherit
SIGINT *ignored*; an ignored signal stays ignored across ``exec``, and Python then installs no
KeyboardInterrupt handler, so a child a test stops with SIGINT would never stop. The tests
that send SIGINT start their children with ``preexec_fn=sigint_default``.
"""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """In the child, before ``exec``: SIGINT back to its default action (the new Python then
    installs its own KeyboardInterrupt handler, as under a terminal)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
