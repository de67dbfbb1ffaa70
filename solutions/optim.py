"""Adam (Kingma & Ba 2015) with a linear warm-up, as in the Transformer paper, then a linear
decay (the paper's falls as 1/√t): the rate grows for ``warmup`` steps and reaches 0 at step
``steps`` (if given), never below."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Adam:
    """m ← β₁m + (1 − β₁)g,  v ← β₂v + (1 − β₂)g²,  θ ← θ − α_t · m̂ / (√v̂ + ε), with the
    bias-corrected m̂ = m / (1 − β₁ᵗ), v̂ = v / (1 − β₂ᵗ) and
    α_t = lr · min(1, t / warmup) · (1 − (t − 1) / steps). Updates the named weights in place."""
    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-9
    warmup: int = 0
    steps: int = 0                  # 0: no decay
    t: int = 0
    m: dict = field(default_factory=dict)
    v: dict = field(default_factory=dict)

    def rate(self) -> float:
        """α_t of the step about to be taken."""
        rate = self.lr * min(1.0, (self.t + 1) / self.warmup) if self.warmup else self.lr
        return rate * max(0.0, 1.0 - self.t / self.steps) if self.steps else rate

    def step(self, weights: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        rate = self.rate()
        self.t += 1
        for name, g in grads.items():
            m = self.m.setdefault(name, np.zeros_like(g))
            v = self.v.setdefault(name, np.zeros_like(g))
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * g * g
            m_hat = m / (1.0 - self.beta1 ** self.t)
            v_hat = v / (1.0 - self.beta2 ** self.t)
            weights[name] -= rate * m_hat / (np.sqrt(v_hat) + self.eps)
