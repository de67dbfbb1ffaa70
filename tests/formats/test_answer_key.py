"""The answer key file: valid JSON whatever the ids, verified by its signature, private."""

import hashlib
import json
from pathlib import Path
import stat

import pytest

from formats.answer_key import AnswerKeyError, canonical, key_bytes, load_key, parse_entry
from formats.textfile import write_atomic

SECRET = b"answer key test secret, 32 bytes"
ASSIGNMENT = {"id": "hw", "title": "HW", "digest": "0" * 64, "points": 1, "problems": []}


def entries(**students):
    return {sid: canonical(entry) for sid, entry in students.items()}


@pytest.fixture
def key_path(tmp_path):
    students = entries(**{'s"1': {"name": "Zoë \u2028 “Q”", "problems": {"p": {"answers": {"x": 0.1}}}},
                          "ß\\2": {"name": "", "problems": {}}})
    path = tmp_path / "key.json"
    write_atomic(path, key_bytes(ASSIGNMENT, students, "0.1.0", SECRET), private=True)
    return path


def test_the_file_is_json_and_verifies_with_the_secret(key_path):
    key = load_key(key_path, SECRET)
    assert sorted(key["students"]) == ['s"1', "ß\\2"]
    assert key["students"]['s"1']["problems"]["p"]["answers"]["x"] == 0.1
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600


def test_the_same_inputs_give_the_same_bytes(key_path, tmp_path):
    again = key_bytes(ASSIGNMENT, entries(**{"ß\\2": {"name": "", "problems": {}},
                                              's"1': {"name": "Zoë \u2028 “Q”",
                                                      "problems": {"p": {"answers": {"x": 0.1}}}}}),
                      "0.1.0", SECRET)
    assert again == key_path.read_bytes()


@pytest.mark.parametrize("change", [
    lambda key: key["students"]['s"1']["problems"]["p"]["answers"].update(x=0.2),
    lambda key: key["students"].pop("ß\\2"),
    lambda key: key["assignment"].update(points=100),
    lambda key: key.update(signature="hmac-sha256:" + "0" * 64),
    lambda key: key.update(signature="hmac-sha256:é"),
])
def test_any_change_breaks_the_signature(key_path, change):
    key = json.loads(key_path.read_text())
    change(key)
    key_path.write_text(json.dumps(key))
    with pytest.raises(AnswerKeyError, match="does not verify"):
        load_key(key_path, SECRET)


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe", "not a readable answer key"),
    (b"{}", "not an answer key of format"),
    (b'{"format": "attnkit-answer-key/1"}', "no students"),
    (b'{"format": "attnkit-answer-key/1", "students": {"s": {"x": NaN}}}', "not a key the kit wrote"),
])
def test_unreadable_keys_are_named(tmp_path, content, message):
    path = tmp_path / "key.json"
    path.write_bytes(content)
    with pytest.raises(AnswerKeyError, match=message):
        load_key(path, SECRET)
    with pytest.raises(AnswerKeyError, match="no such file"):
        load_key(tmp_path / "missing.json", SECRET)


def test_the_line_reader_gives_what_the_whole_file_gives_and_entries_are_read_on_demand(key_path):
    from formats.answer_key import Entries, _load_whole, entry_digest

    quick, whole = load_key(key_path, SECRET), _load_whole(key_path, SECRET)
    assert isinstance(quick["students"], Entries)             # the line-by-line reader took it
    assert {k: v for k, v in quick.items() if k != "students"} == \
        {k: v for k, v in whole.items() if k != "students"}
    assert dict(quick["students"].items()) == whole["students"]
    for sid in whole["students"]:
        assert entry_digest(quick, sid) == entry_digest(whole, sid)


@pytest.mark.parametrize("sid", ["é" * 2046 + "x",          # its last character cut by the decoded prefix
                                 "long " * 1000,             # longer than the prefix: the whole line
                                 "𝔁" * 1023 + "ab"])          # 4-byte characters across the cut
def test_the_mapped_reader_finds_any_student_id_whole(tmp_path, sid):
    from formats.answer_key import Entries

    path = tmp_path / "key.json"
    students = entries(**{sid: {"name": "N", "problems": {}}, "s2": {"name": "M", "problems": {}}})
    write_atomic(path, key_bytes(ASSIGNMENT, students, "0.1.0", SECRET), private=True)
    key = load_key(path, SECRET)
    assert isinstance(key["students"], Entries)
    assert sorted(key["students"]) == sorted([sid, "s2"]) and key["students"][sid]["name"] == "N"


def test_an_empty_key_file_is_named(tmp_path):
    path = tmp_path / "key.json"
    path.write_bytes(b"")
    with pytest.raises(AnswerKeyError, match="not a readable answer key"):
        load_key(path, SECRET)


def test_a_re_indented_key_is_still_read_and_verified(key_path):
    key = json.loads(key_path.read_text(encoding="utf-8"))
    key_path.write_text(json.dumps(key, indent=4, ensure_ascii=False), encoding="utf-8")
    again = load_key(key_path, SECRET)
    assert not hasattr(again["students"], "digest")           # the whole-file reader
    assert again["students"]['s"1']["problems"]["p"]["answers"]["x"] == 0.1


def test_an_entry_changed_on_disk_after_loading_is_refused(key_path):
    key = load_key(key_path, SECRET)
    data = key_path.read_bytes()
    key_path.write_bytes(data.replace(b'"x":0.1', b'"x":0.2'))      # same length: offsets still fit
    with pytest.raises(AnswerKeyError, match="changed on disk after it was verified"):
        key["students"]['s"1']


def test_a_key_replaced_on_disk_while_grading_leaves_the_loaded_one_whole(key_path):
    """A rebuild writes a new file and renames it over the old one: the key already loaded
    keeps reading the file it verified."""
    key = load_key(key_path, SECRET)
    write_atomic(key_path, key_bytes(ASSIGNMENT, entries(other={"name": "", "problems": {}}),
                                     "9.9.9", SECRET), private=True)
    assert key["students"]['s"1']["problems"]["p"]["answers"]["x"] == 0.1
    assert sorted(load_key(key_path, SECRET)["students"]) == ["other"]


def test_a_pass_over_the_class_reads_the_heads_alone_and_gives_the_same_entries(tmp_path):
    from formats.lazy_entries import LazyEntry
    students = entries(**{
        "a": {"email": "a@x", "lms_id": "42", "name": 'Zoë ,"problems":{ “Q”', "notebook": "a.ipynb",
              "problems": {"p": {"answers": {"x": 0.1}, "twins": {"t": [1, 2]}}}},
        "b": {"name": "B", "problems": {}, "zz_after": [1]},
        "c": {"problems": {"p": {"answers": {"problems": 1}}}},
    })
    path = tmp_path / "key.json"
    write_atomic(path, key_bytes(ASSIGNMENT, students, "0.1.0", SECRET), private=True)
    key = load_key(path, SECRET)
    seen = {}
    for sid, entry in key["students"].items():
        assert isinstance(entry, LazyEntry)
        seen[sid] = (entry.get("lms_id"), entry.get("name"), "email" in entry)
        assert entry._whole is None                  # the head answered: no record was parsed
    assert seen == {"a": ("42", 'Zoë ,"problems":{ “Q”', True), "b": (None, "B", False),
                    "c": (None, None, False)}
    for sid, entry in key["students"].items():     # anything else: the whole entry, the same
        assert dict(entry) == json.loads(students[sid]) == key["students"][sid]
        assert entry.get("zz_after") == json.loads(students[sid]).get("zz_after")
    assert [dict(e) for e in key["students"].values()] == [json.loads(students[s]) for s in "abc"]
    assert key["students"].text("a") == students["a"].encode()
    import copy
    import pickle
    lazy = next(iter(key["students"].values()))
    for plain in (copy.copy(lazy), copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):
        assert type(plain) is dict and plain == json.loads(students["a"])


def test_a_lazy_entry_changed_on_disk_is_refused(key_path):
    key = load_key(key_path, SECRET)
    data = key_path.read_bytes()
    key_path.write_bytes(data.replace("Zoë".encode(), b"ZoeX"))         # the same length, in place
    changed = dict(key["students"].items())['s"1']
    with pytest.raises(AnswerKeyError, match="changed on disk"):
        changed.get("name")
    with pytest.raises(AnswerKeyError, match="changed on disk"):
        changed["problems"]


def test_entries_parse_to_the_values_their_text_holds(example_build):
    """parse_entry (orjson) on every entry of a real build: each parsed entry's canonical
    text is, byte for byte, the text it was read from (every float the same bits, -0.0
    included), and it equals what ``json`` makes of that text."""
    _, key = example_build(12, "parse entry test secret, 32 bytes")
    students = key["students"]
    for sid in students:
        text = canonical(students[sid]).encode("utf-8")
        assert hashlib.sha256(text).hexdigest() == students.digest(sid)     # the text the build signed
        entry = parse_entry(text)
        assert canonical(entry).encode("utf-8") == text
        assert entry == json.loads(text)


@pytest.mark.parametrize("text", [
    b'{"big":123456789012345678901234567890,"name":"x"}',   # beyond 64 bits: orjson gives a float
    b'{"big":[-9223372036854775809],"seed":"123456789012345678901234567890"}',
    b'{"big":{"a":18446744073709551616},"x":0.00012345678901234567}',
    b'{"name": "-0.0 and \\u00e9", "values": [-0.0, 1e-320, 5e-324, 1.7976931348623157e308]}',
])
def test_what_orjson_refuses_json_reads_and_values_are_json_s(text):
    assert parse_entry(text) == json.loads(text)
    assert [type(v) for v in _leaves(parse_entry(text))] == [type(v) for v in _leaves(json.loads(text))]
    assert canonical(parse_entry(text)) == canonical(json.loads(text))


def test_the_quick_search_for_long_integers_finds_what_the_regex_finds():
    """``_may_hold_a_long_integer`` finds runs of digits in bulk and asks the regex only of
    those not after a point: on random texts of digits and JSON's punctuation it answers as
    the regex alone does."""
    import random
    from formats.answer_key import _LONG_INTEGER, _may_hold_a_long_integer
    rng = random.Random(19)
    punctuation, digits = b'.,:[]{}-e"a ', b"0123456789"
    texts = [b"", b"[1]", b"[1234567890123456789]", b"[0.1234567890123456789]", b'["1234567890123456789"]',
             b"[-1234567890123456789,1]", b"[1234567890123456789", b"1234567890123456789]"]
    texts += [bytes(rng.choice(punctuation) if rng.random() < 0.08 else rng.choice(digits)
                    for _ in range(rng.randint(0, 80))) for _ in range(5000)]
    found = [_may_hold_a_long_integer(t) for t in texts]
    assert found == [_LONG_INTEGER.search(t) is not None for t in texts]
    assert found[:8] == [False, False, True, False, False, True, False, False] and sum(found) > 50


def test_a_damaged_entry_text_is_an_error_not_a_value():
    with pytest.raises(ValueError):
        parse_entry(b'{"name": ')


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def test_verifying_a_large_key_keeps_only_a_window_of_it_resident(tmp_path):
    """The key is mapped to be hashed; its pages are let go of as the hashing passes them, so
    the resident peak does not grow with the key (here 69 MB; a course's can be gigabytes)."""
    import subprocess
    import sys

    row = canonical([round(0.1 * i, 6) for i in range(20_000)])        # ~200 kB of floats
    students = {f"s{i:04d}": canonical({"name": "N", "problems": {}, "x": row}) for i in range(560)}
    path = tmp_path / "key.json"
    write_atomic(path, key_bytes(ASSIGNMENT, students, "0.1.0", SECRET), private=True)
    assert path.stat().st_size > 60 * 2**20
    probe = ("import sys; from formats.answer_key import load_key, Entries\n"
             "def peak():   # (VmHWM: ru_maxrss would start at the test process's own peak)\n"
             "    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
             f"before = peak(); key = load_key(sys.argv[1], {SECRET!r})\n"
             "assert isinstance(key['students'], Entries) and len(key['students']) == 560\n"
             "print((peak() - before) / 1024)")
    grown = float(subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True,
                                 check=True, cwd=Path(__file__).resolve().parents[2]).stdout)
    assert grown < 24, f"the peak grew by {grown:.0f} MB verifying a {path.stat().st_size / 2**20:.0f} MB key"


@pytest.mark.parametrize("written_as, readable", [
    ("attnkit-answer-key/1", True),      # an earlier kit's key: arrays as lists only
    ("attnkit-answer-key/2", True),      # this kit's: twins and hidden cases may be packed
    ("attnkit-answer-key/4", False),     # a later kit's: refused whole, not at a wrong answer
])
def test_keys_of_the_formats_this_kit_reads_are_read_and_others_refused(tmp_path, monkeypatch,
                                                                         written_as, readable):
    import formats.answer_key as answer_key
    from formats.serialize import decode_names

    assert answer_key.FORMAT == "attnkit-answer-key/2"
    listed = {"x": {"array": [1.5, 2.5], "dtype": "float64", "shape": [2]}}
    packed = {"x": {"packed": "AAAAAAAA+D8AAAAAAAAEQA==", "dtype": "float64", "shape": [2]}}
    entry = {"name": "", "problems": {"p": {"answers": listed, "twins": {"t": packed}}}}
    monkeypatch.setattr(answer_key, "FORMAT", written_as)
    data = key_bytes(ASSIGNMENT, entries(s1=entry), "0.1.0", SECRET)
    monkeypatch.undo()
    path = tmp_path / "key.json"
    path.write_bytes(data)
    if not readable:
        with pytest.raises(AnswerKeyError, match="not an answer key of format"):
            load_key(path, SECRET)
        return
    record = load_key(path, SECRET)["students"]["s1"]["problems"]["p"]
    for stored in (record["answers"], record["twins"]["t"]):
        assert decode_names(stored)["x"].tolist() == [1.5, 2.5]
