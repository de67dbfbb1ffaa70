"""Synthetic submissions: notebooks written as students of known kinds would hand them in,
and what a correct grader must make of each. They feed ``make demo``, the grader's tests
and its benchmarks.

Every notebook starts from the student's OWN release notebook (their givens, their cell
ids) and fills its answer cells according to a *profile*:

- ``correct``: every answer as in the instructor notebook; free responses get a short text;
- ``partial``: a few answers left as placeholders, one numeric answer far off;
- ``misconception:<twin>``, one per misconception the assignment can diagnose: the twin's
  value (from the key) for every part that lists it, and for ``implement`` problems the
  reference code with a textual edit that makes exactly that mistake;
- ``typed_wrong``: answers of the wrong form (a flattened matrix, the transpose, NaN, a
  number as text) — and a choice written ``' b '``, which is right (case and spaces do not
  matter);
- hostile ones, each otherwise correct so that what it costs is exactly known:
  ``allclose_patch``, ``exit_midway``, ``infinite_loop``, ``memory_bomb``, ``fork_bomb``,
  ``read_key``, ``fake_frames``, ``edited_givens``, ``wrong_student``, ``broken_json``,
  ``stripped_metadata``.

``manifest.json`` beside the submissions says, per student, the profile and the expected
outcome of every part (implement: every test family): status, score, and the misconception a
diagnosed part must report. The expectation is computed here from the answer key with
``formats.compare`` — the kit's one comparison — and never from the grader's own code, so
the grader's tests compare it against an independent oracle.

Deterministic: the same build, key, layout and seed give the same bytes (``seed`` decides
who gets which profile and which cells the profiles touch). Nothing here runs a submission's
code. The hostile notebooks are for the sandbox: do not open them in Jupyter (the forged
frames would go to the kernel's own sockets; the loop never ends).

The package, by concern:

- ``profiles``: the catalogue of profiles, who gets which, and the honest ones;
- ``hostile``: the hostile profiles and their payloads;
- ``misconceptions``: the twins a submission can reproduce (``CODE_EDITS``);
- ``notebooks``: the build's notebooks and the draft of one student's notebook;
- ``oracle``: what a correct grader must report, from the key alone;
- ``submissions``: ``synthesize`` and the manifest; ``cli``: ``python -m synthetic``.
"""

from synthetic.cli import main
from synthetic.hostile import easier
from synthetic.twin_edits import CODE_EDITS, diagnosable_misconceptions, edit_code
from synthetic.notebooks import SyntheticError
from synthetic.oracle import (FAILED, MANUAL, MISSING, PARTIAL, PASSED, expect_choice,
                              expect_implement, expect_numeric, recompute_answers)
from synthetic.profiles import (MISCONCEPTION_PREFIX, PROFILES, assign_profiles, describe_profile,
                                far_off, profile_names)
from synthetic.submissions import (FORMAT, LAYOUTS, MANIFEST, Synthetic, load_manifest,
                                   manifest_bytes, submission_path, synthesize)

__all__ = [
    "CODE_EDITS", "FAILED", "FORMAT", "LAYOUTS", "MANIFEST", "MANUAL", "MISCONCEPTION_PREFIX",
    "MISSING", "PARTIAL", "PASSED", "PROFILES", "Synthetic", "SyntheticError", "assign_profiles",
    "describe_profile", "diagnosable_misconceptions", "easier", "edit_code", "expect_choice",
    "expect_implement", "expect_numeric", "far_off", "load_manifest", "main", "manifest_bytes",
    "profile_names", "recompute_answers", "submission_path", "synthesize",
]
