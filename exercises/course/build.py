"""Assignment build: per student a student notebook, an instructor notebook and an entry in
the signed answer key (optionally printable HTML pages); or, for an nbgrader course, one
class-wide source notebook.

Output layout (``OUT``)::

    release/<student>/<assignment>.ipynb                what each student gets
    instructor/notebooks/<student>/<assignment>.ipynb   answers filled in, worked solutions
    instructor/answer_key.json                          signed
    print/<student>.html                                --format html: the problem set for paper
    instructor/print/<student>.html                     --format html: its answer key

``instructor/`` is private: the folder is mode 0700 and its files 0600. A build first
removes the old key, so a build that dies half-way never leaves a key that disagrees with
the notebooks beside it (rerunning it writes the same bytes); a build that makes no student
at all writes no key. Files of an earlier build for students the new key does not hold (a
smaller roster, or a student whose variant failed this time) are *stale*: the build lists
them, and with ``remove_stale`` removes them (``stale_files``) — those files only (and a
student's folder once it is empty), never anything else in ``OUT``.

Everything is a pure function of (assignment spec, templates, roster, course secret, kit
version): no dates, no random ids, sorted keys, so a rebuild writes the same bytes.
Students are independent, so ``jobs`` worker processes share them; a student whose variant
cannot be made is reported and the others are still written.
"""

from __future__ import annotations

import gc
import hashlib
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from formats import answer_key, entry_codec
from formats.key_shards import References, ShardWriter
from formats.version import KIT_VERSION
from formats.key_shape import CLASS_STUDENT, issued_before, issued_digest
from exercises.render.due_text import due_text, late_text
from exercises.render.notebook import (Header, ProblemVariant, answer_names, build_notebook, notebook_bytes,
                                       student_and_instructor)
from exercises.course import pools
from exercises.course.stale_files import remove_files, stale_files, student_of
from exercises.variant.seeds import variant_seed
from formats.textfile import write_atomic
from exercises.template.model import TemplateError
from exercises.variant.draw import VariantError, make_variant

FORMATS = ("notebook", "html")



@dataclass
class BuildResult:
    students: int = 0
    failures: list[str] = field(default_factory=list)
    files: int = 0
    seconds: float = 0.0
    key_path: Path | None = None          # None: no key was written (no student was built)
    key_bytes: int = 0                    # the key's index and shards
    stale: list[str] = field(default_factory=list)     # OUT-relative files of other students
    removed: list[str] = field(default_factory=list)   # those of them removed (remove_stale)
    # A rebuild that would give issued students new numbers: student → problems. Refused (no
    # file of theirs written, the old key kept) unless ``new_variants``.
    changed: dict = field(default_factory=dict)
    refused: bool = False
    # pool problem → member template → how many of the students built got it
    pools: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def built(self) -> int:
        return self.students - len(self.failures)

    @property
    def stale_students(self) -> list[str]:
        return sorted({student_of(path) for path in self.stale})


def problem_variants(assignment, secret: bytes | None, student_id: str,
                     members: dict[str, str] | None = None, seeds: dict[str, int] | None = None
                     ) -> list[ProblemVariant]:
    """The student's variant of every problem, from the seed HMAC(secret, assignment,
    student, problem) — or from ``seeds`` (problem → seed), which a cluster's workers get
    instead of the secret. ``members``: pool problem → the member template the class draw
    gave this student (``exercises.course.pools.draws``); an assignment with pools needs it."""
    out = []
    for p in assignment.problems:
        template = _member(p, (members or {}).get(p.id))
        seed = seeds[p.id] if seeds is not None else variant_seed(secret, assignment.id, student_id, p.id)
        out.append(ProblemVariant(p.id, p.title_of(template), make_variant(template, seed)))
    return out


def _member(problem, member: str | None):
    if not problem.pool:
        return problem.template
    if member is None:
        raise ValueError(f"problem {problem.id} is a pool: the class draw (exercises.course.pools.draws) "
                         f"says which member each student gets")
    return next(t for t in problem.pool if t.id == member)


def header(assignment, student=None) -> Header:
    """What the notebook and the printed page say about the assignment: for a student, with
    their own due date when they have an extension (the spec's ``extensions:``)."""
    sid = student.id if student else None
    return Header(assignment.id, assignment.title, assignment.source_digest, assignment.instructions,
                  sid or "", student.name if student else "", KIT_VERSION,
                  due_text(assignment.deadline, sid), late_text(assignment.deadline, sid))


def key_entry(problems: list[ProblemVariant], notebook: str, student=None, issued: dict | None = None) -> dict:
    """The student's key entry. ``issued``: problem → the issued digests of the variants an
    earlier build gave them (oldest first), kept so their notebooks are still recognised."""
    names = answer_names(problems)
    entry = {"notebook": notebook, "problems": {}}
    if student is not None:
        entry.update(name=student.name, email=student.email)
    for p in problems:
        record = p.variant.record()
        record["answer_names"] = names[p.id]       # part id → the notebook's variable
        earlier = [d for d in (issued or {}).get(p.id, []) if d != issued_digest(record)]
        if earlier:
            record["issued_before"] = earlier
        entry["problems"][p.id] = record
    return entry


def issued_variants(key: dict) -> dict[str, dict[str, list[str]]]:
    """student → problem → the issued digests of every variant ``key`` knows they were given
    (the current one last)."""
    return {sid: {pid: [*issued_before(record), issued_digest(record)]
                  for pid, record in key["students"][sid]["problems"].items()}
            for sid in key["students"]}


def _changed(problems: list[ProblemVariant], issued: dict[str, list[str]]) -> list[str]:
    """The problems whose new variant is not the one last issued."""
    return [p.id for p in problems
            if p.id in issued and issued[p.id] and issued_digest(p.variant.record()) != issued[p.id][-1]]


def assignment_summary(assignment, drawn: dict | None = None) -> dict:
    """The key's head. ``parts``: each problem's graded parts (implement: test families) and
    their points, which come from the template alone, so the grader can list a submission's
    parts without reading its entry. A pool lists its members instead (each with its parts):
    whose parts a student has, their entry says; ``drawn`` (pool → student → member,
    ``pools.recorded``) is kept with it, so a rebuild can give everyone the same member."""
    return {"id": assignment.id, "title": assignment.title, "digest": assignment.source_digest,
            "points": assignment.points,
            "problems": [_head_problem(p, (drawn or {}).get(p.id)) for p in assignment.problems]}


def _head_problem(p, drawn: dict | None = None) -> dict:
    if p.pool:
        # untitled, the pool is named by its members' titles (each student sees their own)
        title = " / ".join(t.title for t in p.pool) if p.own_titles else p.title
        return {"id": p.id, "title": title, "points": p.points,
                "pool": [{"template": t.id, "title": p.title_of(t), "kind": t.kind,
                          "points": t.points, "parts": _parts(t)} for t in p.pool],
                **({"drawn": drawn} if drawn is not None else {})}
    return {"id": p.id, "template": p.template.id, "title": p.title, "kind": p.template.kind,
            "points": p.template.points, "parts": _parts(p.template)}


def _parts(template) -> list[list]:
    if template.kind == "implement":
        return [[f.family, f.points] for f in template.tests]
    return [[part.id, part.points] for part in template.parts]


# --- one student -------------------------------------------------------------------------

_CONTEXT: dict = {}


def _build_student(student) -> tuple[str, tuple | None, str, int, list[str]]:
    """(student id, stored key entry and its digest or None, failure message, files written,
    problems whose issued variant would change) — run in a worker, so the key's heaviest
    encoding is done in parallel too."""
    student_id, entry, failure, files, changed = made_student(student)
    out = _CONTEXT["out"]
    for relative, data, private in files:
        write_atomic(out / relative, data, private=private)
    return student_id, entry, failure, len(files), changed


def made_student(student) -> tuple[str, tuple | None, str, list[tuple[str, bytes, bool]], list[str]]:
    """What ``_build_student`` writes, as data: (student id, key entry or None, failure,
    [(path under OUT, bytes, private)], changed problems). A cluster's workers return it."""
    assignment, secret = _CONTEXT["assignment"], _CONTEXT["secret"]
    try:
        problems = problem_variants(assignment, secret, student.id, _CONTEXT.get("drawn", {}).get(student.id),
                                    _CONTEXT["seeds"][student.id] if "seeds" in _CONTEXT else None)
    except (VariantError, TemplateError) as err:
        return student.id, None, f"{student.id}: {err}", [], []
    issued = _CONTEXT.get("issued", {}).get(student.id, {})
    changed = _changed(problems, issued)
    if changed and not _CONTEXT.get("new_variants"):
        return student.id, None, f"{student.id}: new numbers for {', '.join(changed)}", [], changed
    head = header(assignment, student)
    name = f"{assignment.id}.ipynb"
    files = []
    if "notebook" in _CONTEXT["formats"]:
        release, solved = student_and_instructor(head, problems)
        files += [(f"release/{student.id}/{name}", notebook_bytes(release), False),
                  (f"instructor/notebooks/{student.id}/{name}", notebook_bytes(solved), True)]
    if "html" in _CONTEXT["formats"]:
        from exercises.render.printable import answer_key_page, problem_set_page

        files += [(f"print/{student.id}.html", problem_set_page(head, problems).encode(), False),
                  (f"instructor/print/{student.id}.html", answer_key_page(head, problems).encode(), True)]
    entry = key_entry(problems, f"release/{student.id}/{name}", student, issued)
    return student.id, stored_entry(entry), "", files, changed


def stored_entry(entry: dict) -> tuple[bytes, str]:
    """(the entry as the sharded key stores it, the SHA-256 of its canonical text), made
    where the student is built, so the key's heaviest encoding is shared by the workers."""
    digest = hashlib.sha256(answer_key.canonical(entry).encode("utf-8")).hexdigest()
    return _CONTEXT["references"].pack(entry), digest


def _build_chunk(students) -> list[tuple[str, tuple | None, str, int, list[str]]]:
    with collector_paced():
        done = [_build_student(s) for s in students]
        gc.collect(1)       # the young generations: what a chunk of students left in cycles
    return done


@contextmanager
def collector_paced():
    """Python's cyclic collector off while a chunk of students is built, then back as it was.

    A student's records alone hold thousands of lists and dicts (the arrays of every twin and
    look-alike, written out for the key), and making the variants allocates many more, so
    the collector, which runs every 700 new containers, would run several times a student
    over objects that hold no cycles and are freed by their reference counts: work for
    nothing, on the build's busiest path. What does make cycles (an exception's traceback, a
    template renderer's frames) is collected when the chunk ends. (Grading paces it by
    submissions, with more to it: ``grader.run.garbage``; the build may not import the
    grader, and needs only this.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def init_worker(context: dict) -> None:
    """This process builds for ``context`` (the assignment, secret, output and earlier key)."""
    _CONTEXT.update(context)


def build(assignment, roster, out: Path, jobs: int = 1, formats=("notebook",),
          progress=None, chunk: int = 8, remove_stale: bool = False,
          new_variants: bool = False, runner=None) -> BuildResult:
    """Build every student of ``roster``; ``progress`` (optional) gets ``advance(n)``.
    ``remove_stale``: also remove the stale files of an earlier build (see above).

    ``runner(context, roster, chunk, progress)``: builds the students elsewhere instead of
    ``jobs`` local processes and yields what ``_build_student`` returns for each, as they are
    built (each shard of the key is written once its students are in; on a Dask
    cluster: ``exercises.course.cluster_build.built_on_cluster``); the same bytes either way.

    A rebuild never silently changes issued work: where an earlier key in ``out`` gave a
    student a variant and this build would give them another (a new parameter range, a new
    secret), that student is not built and the build is refused (``BuildResult.changed`` says
    who and which problems; the earlier key is kept), unless ``new_variants``. A change that
    only affects grading (tolerances, points, checks, twins) keeps every variant and rebuilds.
    The new key keeps the issued digests of the variants it replaced, so their notebooks are
    recognised as earlier variants, not as someone else's."""
    started = time.perf_counter()
    out = Path(out)
    secret = assignment.secret()
    private = out / "instructor"
    private.mkdir(parents=True, exist_ok=True)
    private.chmod(0o700)
    key_file = private / "answer_key.json"
    earlier = _earlier_key(key_file, secret, new_variants)
    if earlier is False:
        return _refused_for_the_key(key_file, len(roster))
    # The earlier key stays where it is until the new one replaces it (atomically): a build
    # that is refused, fails for everyone or is killed half-way leaves it, and with it the
    # record of what was issued (notebooks rewritten meanwhile have the same variants, or,
    # with new_variants, are flagged as not the key's until the build completes).
    issued = issued_variants(earlier) if earlier else {}
    drawn = pools.draws(assignment, secret, [s.id for s in roster], earlier or None)
    context = {"assignment": assignment, "secret": secret, "out": out, "formats": tuple(formats),
               "issued": issued, "new_variants": new_variants, "drawn": drawn,
               "references": references(assignment, secret)}
    writer = ShardWriter(key_file, [s.id for s in roster], context["references"], secret,
                         assignment.source_digest)
    roster = sorted(roster, key=lambda s: s.id)     # in the key's order: each shard is written early
    result = BuildResult(students=len(roster))
    built = set()
    for student_id, entry, failure, files, changed in (
            runner(context, roster, chunk, progress) if runner is not None
            else _built_students(context, roster, jobs, chunk, progress)):
        _collect(result, student_id, entry, failure, files, changed)
        writer.add(student_id, *(entry or (None, None)))
        if entry is not None:
            built.add(student_id)
    result.failures.sort()
    result.pools = pools.counts(assignment, {s: d for s, d in drawn.items() if s in built})
    if (result.changed and not new_variants) or not built:
        # refused: the earlier key stands (nothing issued changed); or no student built: no
        # new key (a key of nobody grades nobody)
        writer.abandon()
        result.refused = bool(result.changed and not new_variants)
    else:
        _write_key(result, context, writer, built, earlier, remove_stale)
    result.seconds = time.perf_counter() - started
    return result


def references(assignment, secret: bytes) -> References:
    """The references of the key's stored entries (``formats.entry_codec``): the records of
    the class entry's variant of every problem and pool member, made before any student is
    (a member whose class variant cannot be drawn simply has none)."""
    texts = {}
    for p in assignment.problems:
        seed = variant_seed(secret, assignment.id, CLASS_STUDENT, p.id)
        for template in (p.pool or [p.template]):
            try:
                variant = ProblemVariant(p.id, p.title_of(template), make_variant(template, seed))
            except (VariantError, TemplateError):
                continue
            texts.update(entry_codec.reference_sections(key_entry([variant], "")))
    return References(texts)


def _refused_for_the_key(key_file: Path, students: int) -> BuildResult:
    """The build refused: the earlier key there is not this secret's."""
    result = BuildResult(students=students, refused=True)
    result.failures.append(f"{key_file}: an answer key is there that this course secret does not "
                           "verify (another secret, or damaged): a rebuild would give every student "
                           "new numbers; give the secret it was built with, or rebuild with "
                           "--new-variants")
    return result


def _built_students(context: dict, roster, jobs: int, chunk: int, progress):
    """Every student of ``roster`` built (``_build_student``), in chunks, in ``jobs`` worker
    processes when there is more than one chunk to share; yields each student's result as
    its chunk is done."""
    chunks = [roster[i:i + chunk] for i in range(0, len(roster), chunk)]
    if jobs <= 1 or len(chunks) <= 1:
        init_worker(context)
        for c in chunks:
            yield from _build_chunk(c)
            if progress:
                progress.advance(len(c))
        return
    # fork shares the loaded templates with the workers for free; elsewhere they are pickled
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    with ProcessPoolExecutor(jobs, mp_context=get_context(method), initializer=init_worker,
                             initargs=(context,)) as pool:
        for future in as_completed([pool.submit(_build_chunk, c) for c in chunks]):
            done = future.result()
            yield from done
            if progress:
                progress.advance(len(done))


def _collect(result: BuildResult, student_id: str, entry, failure: str, files: int, changed: list) -> None:
    result.files += files
    if changed:
        result.changed[student_id] = changed
    if entry is None:
        result.failures.append(failure)


def _write_key(result: BuildResult, context: dict, writer: ShardWriter, built: set, earlier,
               remove_stale: bool) -> None:
    """The new answer key's index (it replaces the earlier key atomically; its shards are
    written already), then the stale files of an earlier build listed (and removed, with
    ``remove_stale``)."""
    assignment, out = context["assignment"], context["out"]
    result.key_path = out / "instructor" / "answer_key.json"
    head = {"kit_version": KIT_VERSION, "assignment": assignment_summary(
        assignment, pools.recorded(assignment, context["drawn"], earlier or None))}
    result.key_bytes = writer.finish(head)
    result.files += 1 + len([s for s in writer.written.values() if s])
    result.stale = stale_files(out, assignment.id, built)
    if remove_stale:
        result.removed = remove_files(out, result.stale)


def _earlier_key(key_file: Path, secret: bytes, new_variants: bool):
    """The earlier key in the build folder (None without one); False when a key is there that
    this secret does not verify (and ``new_variants`` was not given)."""
    if not key_file.exists():
        return None
    try:
        return answer_key.load_key(key_file, secret)
    except answer_key.AnswerKeyError:
        return None if new_variants else False


# --- nbgrader course mode ----------------------------------------------------------------

NBGRADER_CONFIG = '''\
# Written by attnkit build --nbgrader (only when no nbgrader_config.py existed).
c = get_config()  # noqa: F821 — nbgrader's config loader defines it
c.CourseDirectory.course_id = {course!r}
c.CourseDirectory.db_url = "sqlite:///gradebook.db"
c.Execute.timeout = 30
'''


def build_nbgrader(assignment, course_dir: Path) -> BuildResult:
    """One class-wide variant as ``source/<assignment>/<assignment>.ipynb`` of an nbgrader
    course, with its value checks as hidden tests; the class key goes to
    ``attnkit/<assignment>/answer_key.json`` (outside ``source/``, which nbgrader releases)."""
    started = time.perf_counter()
    course_dir = Path(course_dir)
    pooled = [p.id for p in assignment.problems if p.pool]
    if pooled:
        result = BuildResult(students=1, seconds=time.perf_counter() - started)
        result.failures.append(f"{assignment.path}: {', '.join(pooled)}: a pool draws one member per "
                               "student, but an nbgrader course build makes one notebook for the whole "
                               "class; build per-student notebooks (attnkit build --roster) instead")
        return result
    secret = assignment.secret()
    problems = problem_variants(assignment, secret, CLASS_STUDENT)
    name = f"{assignment.id}.ipynb"
    source = course_dir / "source" / assignment.id / name
    write_atomic(source, notebook_bytes(build_notebook(header(assignment), problems, "source")))
    config = course_dir / "nbgrader_config.py"
    files = 1
    if not config.exists():
        write_atomic(config, NBGRADER_CONFIG.format(course=course_dir.resolve().name).encode())
        files += 1
    key_path = course_dir / "attnkit" / assignment.id / "answer_key.json"
    entry = key_entry(problems, f"source/{assignment.id}/{name}")
    write_atomic(key_path, answer_key.key_bytes(
        assignment_summary(assignment), {CLASS_STUDENT: answer_key.canonical(entry)}, KIT_VERSION,
        secret), private=True)
    return BuildResult(students=1, files=files + 1, seconds=time.perf_counter() - started,
                       key_path=key_path)
