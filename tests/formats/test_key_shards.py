"""The sharded answer key (formats.key_shards, formats.entry_codec): a build's entries come back
as the very values written, the key is small, each shard is written as soon as its students
are in, and every way of changing it on disk is refused where it is read."""

import hashlib
import json
import pickle
import shutil

import pytest

from formats import entry_codec, key_shards
from formats.answer_key import AnswerKeyError, canonical, key_bytes, load_key
from formats.key_shards import References, ShardWriter

SECRET = "key shards test secret, 32 bytes."
ASSIGNMENT = {"id": "hw", "title": "HW", "digest": "0" * 64, "points": 1, "problems": []}


@pytest.fixture(scope="module")
def sharded(example_build):
    out, key = example_build(12, SECRET)
    return out, key


def test_every_entry_comes_back_as_the_values_written(sharded):
    """Decoded, each entry's canonical text is the one the build signed (its SHA-256 is the
    shard header's), so a one-file key of the same entries holds the same bytes per student."""
    out, key = sharded
    students = key["students"]
    assert isinstance(students, key_shards.ShardedEntries) and len(students) == 12
    texts = {}
    for sid in students:
        text = canonical(students[sid])
        assert hashlib.sha256(text.encode()).hexdigest() == students.digest(sid)
        texts[sid] = text
    one_file = out / "one_file.json"
    head = {k: v for k, v in key.items() if k in ("assignment",)}
    one_file.write_bytes(key_bytes(head["assignment"], texts, key["kit_version"], SECRET.encode()))
    again = load_key(one_file, SECRET.encode())
    assert all(canonical(again["students"][sid]) == texts[sid] for sid in texts)
    assert all(again["students"].digest(sid) == students.digest(sid) for sid in texts)


def test_the_key_is_small_and_its_shards_are_named_by_their_headers(sharded):
    out, key = sharded
    folder = out / "instructor" / "answer_key.shards"
    shards = sorted(folder.iterdir())
    assert len(shards) == 1                               # 12 students: one shard
    per_student = sum(p.stat().st_size for p in shards) / 12
    assert per_student < 40_000, per_student              # (a one-file key: ~135 kB)
    line = shards[0].read_bytes().split(b"\n", 1)[0] + b"\n"
    assert shards[0].name.endswith(hashlib.sha256(line).hexdigest()[:16] + ".shard")
    assert oct(shards[0].stat().st_mode & 0o777) == "0o600"


def test_a_front_is_read_without_decoding_a_problem(sharded):
    _, key = sharded
    students = key["students"]
    for sid, entry in students.items():
        assert entry["name"] == students[sid]["name"] and entry["notebook"].endswith(".ipynb")


def _copy(out, tmp_path):
    shutil.copytree(out / "instructor", tmp_path / "instructor",
                    ignore=shutil.ignore_patterns("notebooks", "print"))
    return tmp_path / "instructor" / "answer_key.json"


def test_an_entry_changed_in_its_shard_is_refused_when_read(sharded, tmp_path):
    out, _ = sharded
    index = _copy(out, tmp_path)
    shard = next((index.parent / "answer_key.shards").iterdir())
    data = bytearray(shard.read_bytes())
    data[-100] ^= 0x01                                    # in the last student's blob
    shard.write_bytes(bytes(data))
    key = load_key(index, SECRET.encode())                # the headers still verify …
    last = sorted(key["students"])[-1]
    key["students"][sorted(key["students"])[0]]           # … and the others' entries read
    with pytest.raises(AnswerKeyError, match=f"the entry of '{last}' differs"):
        key["students"][last]


@pytest.mark.parametrize("change", ["header", "missing", "other secret", "index"])
def test_a_changed_shard_header_index_or_secret_is_refused_at_load(sharded, tmp_path, change):
    out, _ = sharded
    index = _copy(out, tmp_path)
    shard = next((index.parent / "answer_key.shards").iterdir())
    secret = SECRET.encode()
    if change == "header":
        line, rest = shard.read_bytes().split(b"\n", 1)
        header = json.loads(line)
        header["students"][0][1] += 0                      # the same header, written another way
        shard.write_bytes(json.dumps(header).encode() + b"\n" + rest)
        match = "not the one the key's index signed"
    elif change == "missing":
        shard.unlink()
        match = "a shard of the key cannot be read"
    elif change == "other secret":
        secret, match = b"another course secret, 32 bytes..", "signature does not verify"
    else:
        data = json.loads(index.read_text())
        data["shards"][0]["students"] += 1
        index.write_text(json.dumps(data))
        match = "signature does not verify"
    with pytest.raises(AnswerKeyError, match=match):
        load_key(index, secret)


def test_a_portion_travels_alone_and_reads_as_the_key(sharded):
    _, key = sharded
    students = key["students"]
    wanted = sorted(students)[3:6]
    portion = pickle.loads(pickle.dumps(students.portion(wanted)))
    assert sorted(portion) == wanted
    for sid in wanted:
        assert canonical(portion[sid]) == canonical(students[sid])
        assert portion.digest(sid) == students.digest(sid)
        assert portion.front(sid)["name"] == students[sid]["name"]
    assert list(portion.only(wanted[0])) == [wanted[0]]


def _entry(i: int) -> dict:
    packed = {"dtype": "float64", "packed": "AAAAAAAA+D8AAAAAAAAEQA==", "shape": [2]}
    return {"name": f"S{i}", "notebook": f"release/s{i}/hw.ipynb",
            "problems": {"p": {"template": "t", "answers": {"x": i}, "twins": {"a": packed, "b": packed}}}}


def test_each_shard_is_written_once_its_students_are_in(tmp_path, monkeypatch):
    """Flat memory: a shard is on disk (and out of the writer) as soon as its last student is
    built or failed; the index names only shards with someone in them."""
    monkeypatch.setattr(key_shards, "SHARD_STUDENTS", 3)
    ids = [f"s{i}" for i in range(7)]
    references = References.of({"problems": {"p": _entry(0)["problems"]["p"]}})
    writer = ShardWriter(tmp_path / "answer_key.json", ids[::-1], references, SECRET.encode(), "0" * 64)
    folder = tmp_path / "answer_key.shards"
    for i in (0, 1):
        writer.add(ids[i], references.pack(_entry(i)), "d" * 64)
    assert not folder.exists() and len(writer.pending[0]) == 2
    writer.add(ids[2], None, None)                        # failed: the shard is complete
    assert len(list(folder.iterdir())) == 1 and 0 not in writer.pending
    for i in (3, 4, 5):
        writer.add(ids[i], None, None)                    # a shard of failures only: no file
    with pytest.raises(RuntimeError):
        writer.finish({"kit_version": "0", "assignment": ASSIGNMENT})
    writer.add(ids[6], references.pack(_entry(6)), "e" * 64)
    writer.finish({"kit_version": "0", "assignment": ASSIGNMENT})
    key = load_key(tmp_path / "answer_key.json", SECRET.encode())
    assert sorted(key["students"]) == ["s0", "s1", "s6"] and len(list(folder.iterdir())) == 2
    assert key["students"]["s6"] == _entry(6) and key["students"].digest("s1") == "d" * 64


def test_a_build_given_up_leaves_the_earlier_key_and_its_shards(tmp_path):
    references = References.of(None)
    first = ShardWriter(tmp_path / "answer_key.json", ["s0"], references, SECRET.encode(), "0" * 64)
    first.add("s0", references.pack(_entry(0)), "d" * 64)
    first.finish({"kit_version": "0", "assignment": ASSIGNMENT})
    before = {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    second = ShardWriter(tmp_path / "answer_key.json", ["s0", "s1"], references, SECRET.encode(), "0" * 64)
    second.add("s0", references.pack(_entry(5)), "d" * 64)
    second.add("s1", references.pack(_entry(1)), "d" * 64)
    assert len(list((tmp_path / "answer_key.shards").iterdir())) == 2
    second.abandon()
    assert {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert load_key(tmp_path / "answer_key.json", SECRET.encode())["students"]["s0"] == _entry(0)


@pytest.mark.parametrize("cut", [0, 3, 10, -1])
def test_stored_bytes_cut_short_or_extended_do_not_decode(cut):
    references = References.of(None)
    stored = references.pack(_entry(1))
    damaged = stored[:cut] if cut >= 0 else stored + b"\0"
    with pytest.raises(entry_codec.EntryCodecError):
        references.unpack(damaged)


def test_an_entry_decoded_in_part_has_those_problems_as_the_whole_entry_has_them(sharded):
    _, key = sharded
    students = key["students"]
    for sid in sorted(students)[:3]:
        whole = students[sid]
        for wanted in ({"scaling"}, {"masks", "bahdanau"}, {"implement", "motivation"}, set()):
            part = students.problems_of(sid, wanted)
            assert part["problems"] == {p: whole["problems"][p] for p in sorted(wanted)}
            assert part["name"] == whole["name"]
        outline = students.outline(sid)
        for pid, record in outline["problems"].items():
            assert record["grading"] == whole["problems"][pid]["grading"]
