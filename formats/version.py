"""The kit's version: one constant, written into every notebook, key and gradebook row."""

from importlib.metadata import PackageNotFoundError, version

try:
    KIT_VERSION = version("attention-kit")
except PackageNotFoundError:  # a source tree that was never installed
    KIT_VERSION = "0.0.0+unknown"
