"""A grading run without pytest's items, when none of pytest's tools is asked for.

A submission's 43 pytest items (one per part) are how ``-k`` selects parts, ``--junitxml``
writes its report and ``-v`` prints a line per part (``grader.run.plugin``). A run that asks
for none of them reads nothing of those items: building, reporting and collecting them was
the largest share of the grading process's work a submission. So ``run_plain`` records the
same verdicts directly — each submission once its run is done, in order, as a cluster worker
does (``grader.run.cluster``) — and answers the exit code pytest would have: 0 when every
part passed or waits for a human, 1 when any did not, 5 when there was nothing to grade, 2
when interrupted (Ctrl-C: what was recorded stays, the rest is graded on the next run).
"""

from __future__ import annotations

from grader.run import garbage
from grader.verdicts.parts import MANUAL, PASSED

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NOTHING = 0, 1, 2, 5     # pytest's ExitCode


def run_plain(run) -> int:
    """Grade and record every submission ``run`` has to grade; pytest's exit code for it."""
    students = run.students_to_grade()
    if not students:
        return EXIT_NOTHING
    failed = False
    with garbage.paced():          # (by submissions: grader.run.garbage)
        try:
            run.start(students)
            for student in students:
                verdicts = run.wait(student).verdicts
                failed = failed or any(v.status not in (PASSED, MANUAL) for v in verdicts.values())
                run.finished(student)
        except KeyboardInterrupt:
            run.interrupted = True
            return EXIT_INTERRUPTED
        finally:
            run.stop()
    return EXIT_FAILED if failed else EXIT_OK
