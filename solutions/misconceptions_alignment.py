"""Twins of the alignment reference functions (issue 17's mistake search): each registered with
``add_twin``/``twin`` so that MISCONCEPTIONS stays the one registry.

Imports NumPy and the rest of ``solutions`` only.
"""

from __future__ import annotations

import numpy as np  # noqa: F401

from .misconceptions import add_twin, twin  # noqa: F401
