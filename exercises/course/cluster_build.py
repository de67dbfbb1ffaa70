"""Building on a Dask cluster (``attnkit build --cluster``): the roster in chunks, each built on
a worker by the very function a local build runs (``build.made_student``), which returns the
students' files and key entries as bytes; this process writes them and the key. So a cluster
build is byte for byte a local one, and workers need neither the output folder nor a shared
file system — only the kit (and a template's trained model at the same path).

The build's context (the assignment with its templates, the references of the key's entries)
is sent to every worker once, and each chunk brings its own students' seeds, pool draws and
issued variants, so what a worker holds does not grow with the class; the course secret is
never sent: the seeds are worked out here, and a worker could not make another assignment's
(or a later rebuild's) variants with them. A chunk whose task fails — its worker was lost, or
anything else — is sent again whole, once; one that fails again is built one student per task,
and a student whose task still fails is a failure of that student alone (a rerun builds them).
A task is pure, so a task Dask itself retried writes nothing twice.
"""

from __future__ import annotations

import itertools

from exercises.course.build import collector_paced, init_worker, made_student
from exercises.variant.seeds import variant_seed
from formats.textfile import write_atomic


IN_FLIGHT = 4             # chunks out per worker at a time


def build_chunk(context: dict, students: list, own: dict, before_each=None) -> list:
    """On a worker: ``made_student`` for each student of the chunk (``before_each(student)``
    first, for tests that kill a worker mid-chunk); ``own``: the chunk's students' seeds,
    pool draws and issued variants (``chunk_context``)."""
    init_worker({**context, **own})
    done = []
    with collector_paced():
        for student in students:
            if before_each is not None:
                before_each(student)
            done.append(made_student(student))
    return done


def built_on_cluster(client, context: dict, roster, chunk: int, progress=None, before_each=None):
    """Every student of ``roster`` built on the client's workers, their files written under
    ``context["out"]``; yields what ``build._build_student`` returns for each, as it comes."""
    from distributed import as_completed

    shared = client.scatter(shared_context(context), broadcast=True, hash=False)
    pending: dict = {}
    queue = as_completed()

    def send(students: list, tries: int) -> None:
        future = client.submit(build_chunk, shared, students, chunk_context(context, students),
                               before_each, pure=False)
        pending[future] = (students, tries)
        queue.add(future)

    chunks = (list(roster[i:i + chunk]) for i in range(0, len(roster), chunk))
    # a few chunks out per worker, one more in for each one done: what the client and the
    # scheduler hold of the roster (and of its seeds) does not grow with the class
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    for students in itertools.islice(chunks, IN_FLIGHT * workers):
        send(students, 0)
    for future in queue:
        for students in itertools.islice(chunks, 1):
            send(students, 0)
        students, tries = pending.pop(future)
        try:
            made = future.result()
        except Exception as err:  # noqa: BLE001 — a lost worker, or the task's own error
            failed = _again(students, tries, send, err)
            if failed is not None:
                yield failed
                if progress:
                    progress.advance(len(students))
            continue
        future.release()                 # its bytes are written: the scheduler may forget them
        for m in made:
            yield _written(context["out"], m)
        if progress:
            progress.advance(len(made))


_PER_STUDENT = ("drawn", "issued")       # the context's maps by student, sent with each chunk


def shared_context(context: dict) -> dict:
    """The context every worker gets once: no course secret, and nothing by student (each
    chunk brings its own students', ``chunk_context``): what a worker holds does not grow
    with the class."""
    return {**{k: v for k, v in context.items() if k not in _PER_STUDENT}, "secret": None}


def chunk_context(context: dict, students: list) -> dict:
    """A chunk's own part of the context: its students' seeds (worked out here, from the
    secret), pool draws and issued variants."""
    assignment, secret = context["assignment"], context["secret"]
    ids = [s.id for s in students]
    return {"seeds": {sid: {p.id: variant_seed(secret, assignment.id, sid, p.id) for p in assignment.problems}
                      for sid in ids},
            **{k: {sid: context[k][sid] for sid in ids if sid in context.get(k, {})} for k in _PER_STUDENT}}


def _again(students: list, tries: int, send, err: Exception):
    """Send a failed chunk again (whole once, then one student per task); a student that
    failed alone twice is a failure: their result, or None when something was sent."""
    if tries == 0:
        send(students, 1)
        return None
    if len(students) > 1:
        for student in students:
            send([student], 1)
        return None
    return (students[0].id, None, f"{students[0].id}: not built on the cluster "
                                  f"({type(err).__name__}: {err}); build again", 0, [])


def _written(out, made) -> tuple:
    student_id, entry, failure, files, changed = made
    for relative, data, private in files:
        write_atomic(out / relative, data, private=private)
    return student_id, entry, failure, len(files), changed
