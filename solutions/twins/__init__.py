"""Twins: named, deliberately wrong versions of the reference functions, one mistake each.
``registry`` holds them; every other module here registers a family when imported
(``solutions/__init__`` imports them all, in a fixed order)."""
