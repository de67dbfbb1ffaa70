"""The grader: runs students' notebooks in a sandbox and compares their values with the answer key,
in stages — intake, run, verdicts, store, reports, forensics, selfcheck — with sandbox and marking beside them."""
