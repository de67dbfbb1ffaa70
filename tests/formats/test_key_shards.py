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


# --- an entry to grade: its stored mistakes read when first used ---------------------------

def _materialised(entry: dict) -> dict:
    return {**entry, "problems": {pid: {k: dict(v) if k in entry_codec.MISTAKES else v for k, v in record.items()}
                                  for pid, record in entry["problems"].items()}}


def test_an_entry_to_grade_holds_every_value_the_whole_entry_holds(sharded):
    """Its records' twins and look-alikes are mappings decoded when first read; read, the
    entry's canonical text is the signed one, for every entry of the key."""
    _, key = sharded
    students = key["students"]
    for sid in students:
        to_grade = students.to_grade(sid)
        lazy = [v for record in to_grade["problems"].values() for k, v in record.items()
                if k in entry_codec.MISTAKES]
        assert lazy and all(isinstance(v, entry_codec.StoredMistakes) for v in lazy)
        assert list(to_grade["problems"]) == list(students[sid]["problems"])
        assert canonical(_materialised(to_grade)) == canonical(students[sid])
        assert hashlib.sha256(canonical(_materialised(to_grade)).encode()).hexdigest() == students.digest(sid)


def test_a_problems_mistakes_are_decoded_alone_and_in_any_order(sharded):
    _, key = sharded
    students = key["students"]
    sid = sorted(students)[0]
    whole = students[sid]
    to_grade = students.to_grade(sid)
    with_mistakes = [pid for pid in sorted(to_grade["problems"]) if "twins" in to_grade["problems"][pid]]
    assert len(with_mistakes) >= 3
    later = to_grade["problems"][with_mistakes[0]]["twins"]._later
    last, first = with_mistakes[-1], with_mistakes[0]
    assert dict(to_grade["problems"][last]["twins"]) == whole["problems"][last]["twins"]   # the last first
    assert len(later.decoded) == 1               # alone: no other section decoded
    assert dict(to_grade["problems"][first]["twins"]) == whole["problems"][first]["twins"]
    assert len(later.decoded) == 2
    for pid in with_mistakes:
        record = to_grade["problems"][pid]
        for field in entry_codec.MISTAKES:
            if field in whole["problems"][pid]:
                assert record[field] == whole["problems"][pid][field] and field in record
            else:
                assert field not in record


def test_stored_mistakes_copy_and_pickle_as_plain_dicts(sharded):
    import copy
    _, key = sharded
    students = key["students"]
    sid = sorted(students)[1]
    twins = students.to_grade(sid)["problems"]["implement"]["twins"]
    expected = students[sid]["problems"]["implement"]["twins"]
    for made in (copy.copy(twins), copy.deepcopy(twins), pickle.loads(pickle.dumps(twins))):
        assert type(made) is dict and made == expected


def _legacy_pack(entry: dict, references: References) -> bytes:
    """An entry as keys built before the mistakes were stored apart hold it: one section a
    problem, the whole record in it."""
    import struct
    import zlib
    arrays: dict = {}
    order = sorted(entry["problems"])
    top = {**{k: v for k, v in entry.items() if k != "problems"}, "problems": {pid: i for i, pid in enumerate(order)}}
    out = [entry_codec._section(canonical(top).encode(), None, 0xFFFF)]
    for pid in order:
        text = entry_codec.scaffold(canonical(entry["problems"][pid]).encode(), arrays)
        out.append(entry_codec._section(text, None, 0xFFFF))
    body = zlib.compress(b"".join(entry_codec._decoded(data) for data in arrays))
    return b"".join(out) + struct.pack("<I", len(body)) + body


def test_an_entry_stored_before_the_mistakes_were_apart_still_reads(sharded):
    _, key = sharded
    students = key["students"]
    for sid in sorted(students)[:3]:
        whole = students[sid]
        stored = _legacy_pack(whole, students.references)
        zdicts = students.references.zdicts
        assert canonical(entry_codec.unpack(stored, zdicts)) == canonical(whole)
        assert canonical(entry_codec.unpack_to_grade(stored, zdicts)) == canonical(whole)   # (whole)
        assert entry_codec.unpack(stored, zdicts, {"masks"})["problems"] == {"masks": whole["problems"]["masks"]}
        assert entry_codec.unpack_outline(stored, zdicts)["problems"].keys() == whole["problems"].keys()


def test_a_mistakes_section_that_does_not_hold_its_fields_is_an_error(sharded):
    """The top section names each problem's mistakes' fields: a stored entry whose section
    holds others is refused when read, never read as other values."""
    import struct
    import zlib
    _, key = sharded
    students = key["students"]
    sid = sorted(students)[0]
    stored = students.stored(sid)
    size, ref = struct.unpack_from("<IH", stored, 0)
    top = json.loads(zlib.decompress(stored[6:6 + size]))
    pid = next(p for p, at in top["problems"].items() if at[2] == ["lookalikes", "twins"])
    top["problems"][pid][2] = ["twins"]
    body = zlib.compress(canonical(top).encode())
    damaged = struct.pack("<IH", len(body), ref) + body + stored[6 + size:]
    zdicts = students.references.zdicts
    with pytest.raises(entry_codec.EntryCodecError):
        entry_codec.unpack(damaged, zdicts)
    to_grade = entry_codec.unpack_to_grade(damaged, zdicts)
    with pytest.raises(entry_codec.EntryCodecError):
        dict(to_grade["problems"][pid]["twins"])
