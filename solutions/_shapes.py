"""Shape checks shared by every reference function.

A wrong shape must raise ``ValueError`` naming the expected and the actual shape, never be
broadcast silently: a silently broadcast answer key would grade thousands of students wrongly.
Shapes are written the way the docstrings write them, e.g. ``"... L d_k"``: ``...`` stands for
batch dimensions, which must be identical across the arrays checked together.
"""

from __future__ import annotations

import functools

import numpy as np


def as_float(x, name: str) -> np.ndarray:
    """Return ``x`` as a float64 array (the answer key is always float64)."""
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name}: expected a numeric array, got {type(x).__name__}") from err


def _pretty(symbols: list[str]) -> str:
    return "(" + ", ".join(symbols) + ")"


def check_shapes(**named: tuple[np.ndarray, str]) -> dict[str, int]:
    """Check arrays against symbolic shapes and return the bound sizes.

    >>> check_shapes(Q=(np.zeros((2, 3, 4)), "... L d_k"), K=(np.zeros((2, 5, 4)), "... S d_k"))
    {'L': 3, 'd_k': 4, 'S': 5}

    A symbol bound by one array must have the same size in every other array; a digit demands
    that exact size; ``...`` batch dimensions must be equal (no broadcasting).
    """
    try:    # arrays, the common case (every step of the forward pass checks some): their own shape
        key = tuple([(name, spec, array.shape) for name, (array, spec) in named.items()])
    except AttributeError:      # a list or a number: NumPy's view of its shape
        key = tuple([(name, spec, np.shape(array)) for name, (array, spec) in named.items()])
    dims = _CHECKED.get(key)
    if dims is None:
        dims = _check(key)
        if len(_CHECKED) >= _CHECKED_LIMIT:
            _CHECKED.clear()
        _CHECKED[key] = dims
    return dict(dims)


# (name, spec, shape) of each array checked together → the sizes bound: the checks are a
# function of the shapes alone, and the same few shapes come back over and over (the build's
# mistake search runs every twin of attention on every hidden case), so a lookup replaces
# working them out again. Failures are not kept: they raise every time.
_CHECKED: dict[tuple, dict[str, int]] = {}
_CHECKED_LIMIT = 4096


def _check(checked: tuple) -> dict[str, int]:
    bound: dict[str, tuple[int, str]] = {}
    batch: tuple[tuple[int, ...], str] | None = None
    for name, spec, shape in checked:
        symbols, has_batch, core = _parse_spec(spec)
        if len(shape) < len(core) or (not has_batch and len(shape) != len(core)):
            raise ValueError(f"{name}: expected shape {_pretty(symbols)}, got {shape}")
        core_shape = shape[len(shape) - len(core):]
        for symbol, size in zip(core, core_shape):
            if symbol.isdigit():
                if size != int(symbol):
                    raise ValueError(f"{name}: expected shape {_pretty(symbols)}, got {shape}")
            elif symbol in bound:
                if bound[symbol][0] != size:
                    known, source = bound[symbol]
                    raise ValueError(
                        f"{name}: expected shape {_pretty(symbols)} with {symbol}={known} "
                        f"(from {source}), got {shape}"
                    )
            else:
                bound[symbol] = (size, name)
        if has_batch:
            lead = tuple(shape[: len(shape) - len(core)])
            if batch is None:
                batch = (lead, name)
            elif lead != batch[0]:
                raise ValueError(
                    f"{name}: batch dimensions {lead} differ from {batch[1]}'s {batch[0]} "
                    f"(got shape {shape}); batch dimensions are never broadcast"
                )
    return {symbol: size for symbol, (size, _) in bound.items()}


@functools.lru_cache(maxsize=None)
def _parse_spec(spec: str) -> tuple[list[str], bool, tuple[str, ...]]:
    """"... L d_k" → (its symbols, whether it starts with "...", the symbols after it)."""
    symbols = spec.split()
    has_batch = bool(symbols) and symbols[0] == "..."
    return symbols, has_batch, tuple(symbols[1:] if has_batch else symbols)
