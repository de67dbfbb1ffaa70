"""The ``attnkit`` command: argument parsing, output and exit codes; the logic lives elsewhere."""

from formats.version import KIT_VERSION as __version__  # noqa: F401 (attnkit --version)
