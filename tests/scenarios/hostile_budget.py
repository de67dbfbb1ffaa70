"""Hostile cases against the trusted side's budget (issue 13): what a submission sends may
cost the grader only linear work and bounded memory."""

from __future__ import annotations

import copy
import uuid

import numpy as np

from formats.cells import LETTERS

from tests.scenarios.hostile_kit import (COUNTS, Ctx, EXP_SCORES, STD, WEIGHTS, answer_id, index_of,
                                         insert_after, set_source)


# The trusted side's budget (issue 13): what a submission sends may cost the grader only linear
# work and bounded memory; each of these once stopped, froze or exhausted the grader.

def make_empty_giant_array(ctx: Ctx):
    # size 0 and 0 bytes, but .tolist() makes 2**31 empty lists: the grader grew to 24 GB
    set_source(ctx.notebook, answer_id(WEIGHTS), f"{ctx.variable(WEIGHTS)} = np.zeros((2**31 - 1, 0, 4))")
    return ctx.notebook


def make_newline_cell(ctx: Ctx):
    # `^(\s*)[%!]` with re.M scanned on across every blank line from every line start: 60 kB
    # of newlines cost 8 s, these 400,000 would take minutes (a million lines, each a JSON
    # string in the file, are more values than a notebook may have: refused before the regex)
    insert_after(ctx.notebook, answer_id(STD), "\n" * 400_000 + "%ls\n")
    return ctx.notebook


def make_heatmap_overflow(ctx: Ctx):
    # its value range, 2e308, overflowed the heatmap's scale to NaN and int(NaN) stopped the report
    shape = np.shape(ctx.expected(WEIGHTS))
    rows = [[1e308, -1e308, 0.0, 1.0][j % 4] for j in range(shape[1])]
    set_source(ctx.notebook, answer_id(WEIGHTS), f"{ctx.variable(WEIGHTS)} = np.array([{rows!r}] * {shape[0]})")
    return ctx.notebook


def make_givens_bomb(ctx: Ctx):
    # three 1 MB edited copies of a givens cell: 5–7 s of grader CPU under the parser lock
    bomb = "".join(f"a{i} = {i}\n" for i in range(100_000))
    at = index_of(ctx.notebook, "scaling--givens")
    for _ in range(3):
        twin = copy.deepcopy(ctx.notebook["cells"][at])
        twin["id"] = f"givens-bomb-{uuid.uuid4().hex[:8]}"
        twin["source"] = bomb
        ctx.notebook["cells"].insert(at + 1, twin)
    return ctx.notebook


def make_boolean_answers(ctx: Ctx):
    # 30 million booleans each (under a frame's 32 MB): converted to float64 before their
    # shape was checked, 240 MB a comparison
    for part in (WEIGHTS, EXP_SCORES):
        set_source(ctx.notebook, answer_id(part), f"{ctx.variable(part)} = np.zeros(30_000_000, dtype=bool)")
    return ctx.notebook


def make_choice_hedge(ctx: Ctx):
    # "ABCD" in "ABCD": every letter at once was accepted, and read as its first
    options = len(ctx.entry["problems"][COUNTS[0]]["options"][COUNTS[1]])
    set_source(ctx.notebook, answer_id(COUNTS), f"{ctx.variable(COUNTS)} = {LETTERS[:options]!r}")
    return ctx.notebook


def make_magics_everywhere(ctx: Ctx):
    # one note per cell: 100,000 cells made 16.5 MB of notes, a 17 MB feedback page
    for i in range(4_000):
        insert_after(ctx.notebook, answer_id(STD), f"%time _x{i} = {i}")
    return ctx.notebook


def make_too_many_cells(ctx: Ctx):
    for i in range(6_000):
        insert_after(ctx.notebook, answer_id(STD), "%ls")
    return ctx.notebook


def make_json_bomb(ctx: Ctx) -> bytes:
    # 2 million empty lists and as many commas: over the 2 million values a notebook may have
    return b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [' + b"[]," * 2_000_000 + b"[]]}"


def notes_stay_small(corpus, student):
    notes = corpus.submissions[student].notes
    assert len(notes) <= 21 and sum(map(len, notes)) < 25_000, (len(notes), sum(map(len, notes)))
