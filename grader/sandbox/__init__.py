"""The sandbox: where student code runs, and the only place it runs.

The grader's side: ``client`` (``Sandbox``: a submission's run, its reruns after crashes;
``explain``), ``pool`` (its servers lent one per job), ``channel`` (one job's traffic with a
server), ``stream`` (the child's frames cut, counted and decoded), ``attempt`` (each event
checked against the job sent), ``results`` (the ``RunResult`` a run gives back) and
``processes`` (the server processes started and stopped, without NumPy, so a command can start
them first and import NumPy while they boot).

The server side: ``server`` is the process the grader starts (it forks one walled-in child per
job and never holds a job: ``child_watch`` waits for each child, kills and reaps it; ``warming``
runs the child's code on a made-up job before any fork; ``plot_stubs`` stands in for plotting
libraries); ``child`` is what a forked child does (its events written by ``emitter``); ``walls``
shut each child in (each wall stops something the others may not: ``landlock``, ``seccomp``,
``rlimits`` and the rest, through ``libc``). Both sides: ``frames`` are the size-capped,
validated messages they exchange; ``protocol`` the vocabulary of a job (its steps) and of a
child's answers (its events). The server side imports only the standard library, NumPy and its
own modules: nothing here re-exports the client, so starting a server never loads it.
"""
