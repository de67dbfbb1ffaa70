"""The sandbox: where student code runs, and the only place it runs.

``client`` is the grader's side (``Sandbox``: jobs sent, every frame checked against the job);
``processes`` starts and stops the server processes (without NumPy, so a command can start
them first and import NumPy while they boot); ``server`` is the process it starts (it forks one walled-in child per job
and never holds a job); ``walls`` shut each child in (each wall stops something the others may
not); ``frames`` are the size-capped, validated messages both sides exchange; ``protocol`` the
vocabulary of a job (its steps) and of a child's answers (its events). The server side imports
only the standard library, NumPy, ``frames``, ``walls`` and ``protocol``: nothing here
re-exports the client, so starting a server never loads it.
"""
