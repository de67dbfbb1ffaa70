"""The ``attnkit`` command: argument parsing, output and exit codes; the logic lives elsewhere."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("attention-kit")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
