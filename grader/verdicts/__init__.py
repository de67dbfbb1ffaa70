"""Verdicts: judging one part from the key and the student's value — pure, no I/O — with
follow-through credit and the hidden cases of an implement problem."""
