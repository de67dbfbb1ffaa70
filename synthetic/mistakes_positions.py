"""Plausible mistakes in the positional-encoding family (order_blindness): the shuffled
input without positions, PE by hand, attention over X + PE, and PE's shift as a rotation."""

from __future__ import annotations

import numpy as np

from .mistakes_base import mistake, softmax

ORDER = "order_blindness"


def _attend(X, g):
    Q, K, V = X @ g.W_Q, X @ g.W_K, X @ g.W_V
    return softmax(Q @ K.T / 2.0) @ V                 # √d_k = √4


def _pe(L, d=4, first=0):
    pe = np.zeros((L, d))
    for pos in range(L):
        for i in range(d // 2):
            angle = (pos + first) / 10000 ** (2 * i / d)
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = np.sin(angle), np.cos(angle)
    return pe


def _shuffled(g):
    return g.X[np.asarray(g.order)]


@mistake(ORDER, "blind", "the output's columns shuffled instead of its rows")
def blind_columns(g):
    return _attend(g.X, g)[:, np.asarray(g.order)]


@mistake(ORDER, "blind", "the output for X itself: the shuffle left out")
def blind_unshuffled(g):
    return _attend(g.X, g)


@mistake(ORDER, "pe_row", "sin and cos swapped: (cos p, sin p, cos(p/100), sin(p/100))",
         accept=["positional_encoding_sin_cos_swapped"])
def pe_swapped(g):
    return _pe(g.p + 1)[g.p][[1, 0, 3, 2]]


@mistake(ORDER, "pe_row", "all the sines first, then the cosines: (sin p, sin(p/100), cos p, cos(p/100))",
         accept=["positional_encoding_concatenated"])
def pe_concatenated(g):
    return _pe(g.p + 1)[g.p][[0, 2, 1, 3]]


@mistake(ORDER, "pe_row", "positions counted from 1: PE(p + 1)",
         accept=["positional_encoding_one_based"])
def pe_one_based(g):
    return _pe(g.p + 2)[g.p + 1]


@mistake(ORDER, "pe_row", "the angle in degrees: sin(p°)")
def pe_degrees(g):
    angle = np.radians([g.p, g.p, g.p / 100, g.p / 100])
    return np.array([np.sin(angle[0]), np.cos(angle[1]), np.sin(angle[2]), np.cos(angle[3])])


@mistake(ORDER, "seeing", "PE added after the projections: XW + PE",
         accept=["positional_after_projections"])
def seeing_after(g):
    pe = _pe(4)
    Q, K, V = g.X @ g.W_Q + pe, g.X @ g.W_K + pe, g.X @ g.W_V + pe
    return softmax(Q @ K.T / 2.0) @ V


@mistake(ORDER, "seeing", "PE left out: the output for X alone",
         accept=["positional_self_attention_without_pe"])
def seeing_without(g):
    return _attend(g.X, g)


@mistake(ORDER, "seeing", "PE added to the queries and keys only, not to the values")
def seeing_qk_only(g):
    P = g.X + _pe(4)
    return softmax((P @ g.W_Q) @ (P @ g.W_K).T / 2.0) @ (g.X @ g.W_V)


@mistake(ORDER, "seeing_row", "shuffling assumed harmless: row order[0] of the output for X + PE")
def seeing_row_equivariant(g):
    return _attend(g.X + _pe(4), g)[g.order[0]]


@mistake(ORDER, "seeing_row", "PE left out: row 0 of the shuffled output without positions",
         accept=["positional_self_attention_without_pe"])
def seeing_row_without(g):
    return _attend(_shuffled(g), g)[0]


@mistake(ORDER, "rotation", "R transposed: [[cos k, −sin k], [sin k, cos k]]")
def rotation_transposed(g):
    return np.array([[np.cos(g.k), -np.sin(g.k)], [np.sin(g.k), np.cos(g.k)]])


@mistake(ORDER, "rotation",
         "sin and cos exchanged: [[sin k, cos k], [−cos k, sin k]] (R read off a PE with sin and cos swapped)",
         accept=["positional_encoding_sin_cos_swapped"])
def rotation_exchanged(g):
    return np.array([[np.sin(g.k), np.cos(g.k)], [-np.cos(g.k), np.sin(g.k)]])
