"""Frames: what crosses the sandbox boundary comes back equal, and every way a frame can lie is
refused before it costs memory."""

import json
import math
import os
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from grader.sandbox import frames
from grader.sandbox.frames import FrameError, FrameSplitter, FrameTooLarge, Unsupported, decode, encode


def body(header, data: bytes = b"") -> bytes:
    """A hand-made frame body: any header (a JSON-able tree or raw bytes) and any data."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack(">I", len(raw)) + raw + data


def same(a, b) -> bool:
    """Equality as the boundary defines it: tuples arrive as lists, numpy scalars as 0-d
    arrays, NaN equals NaN, arrays keep dtype and shape."""
    if isinstance(a, (np.ndarray, np.generic)):
        a = np.asarray(a)
        return (isinstance(b, np.ndarray) and b.dtype == a.dtype.newbyteorder("=") and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, float):
        return type(b) is float and (a == b or (math.isnan(a) and math.isnan(b)))
    if isinstance(a, (list, tuple)):
        return type(b) is list and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# --- round trips ---------------------------------------------------------------------------

DTYPES = st.sampled_from(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                          "uint64", "float16", "float32", "float64", ">i4", ">f8", ">u2"])
arrays = DTYPES.flatmap(lambda dtype: hnp.arrays(np.dtype(dtype), hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)))
scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=True)
           | st.text(max_size=50) | arrays)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                      | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(values)
def test_values_come_back_equal(value):
    assert same(value, decode(encode(value)))


@settings(max_examples=150, deadline=None)
@given(values)
def test_the_grader_and_the_sandbox_write_headers_that_read_back_the_same(value):
    """The grader writes headers with orjson, the sandbox's side with the standard library's
    encoder (it never imports orjson): what either wrote decodes to the same value (a lone
    surrogate, which orjson refuses, takes the standard library's way there too)."""
    import sys

    import orjson
    with_orjson = encode(value)
    saved = sys.modules.pop("orjson")
    try:
        without = encode(value)
    finally:
        sys.modules["orjson"] = saved
    assert orjson is saved
    assert same(decode(with_orjson), decode(without)) and same(value, decode(with_orjson))


@settings(max_examples=50, deadline=None)
@given(values, st.lists(st.integers(1, 50), min_size=1, max_size=20))
def test_a_stream_cut_anywhere_gives_the_same_frames(value, cuts):
    stream = frames.frame(value) + frames.frame([value, "second"])
    splitter, bodies, position = FrameSplitter(limit=frames.MAX_FRAME), [], 0
    for cut in cuts * (len(stream) // sum(cuts) + 1):
        bodies += splitter.feed(stream[position:position + cut])
        position += cut
    assert splitter.pending == 0 and len(bodies) == 2
    assert same(value, decode(bodies[0])) and same([value, "second"], decode(bodies[1]))


def test_the_dtypes_that_cross_are_numpys_own_little_endian_names():
    names = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "float32", "float64")
    assert frames.DTYPES == {np.dtype(name).newbyteorder("<").str for name in names}


def test_the_server_side_modules_do_not_import_numpy():
    """A server only asked which walls hold (``--bare``) starts without NumPy: frames takes it
    from the process when an array is there to encode, and imports it to decode one."""
    import subprocess
    import sys
    code = ("import sys, grader.sandbox.server; from grader.sandbox import frames; "
            "body = frames.encode({'a': [1, 'x', None]}); assert frames.decode(body) == {'a': [1, 'x', None]}; "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_numpy_scalars_become_zero_dimensional_arrays_of_their_dtype():
    for scalar in (np.float32(1.5), np.int16(-3), np.uint64(2**64 - 1), np.bool_(True), np.float64("nan")):
        back = decode(encode(scalar))
        assert back.shape == () and back.dtype == scalar.dtype and same(scalar, back)


def test_arrays_arrive_native_writable_and_independent():
    strided = np.arange(24, dtype=">f8").reshape(4, 6)[:, ::2].T
    back = decode(encode(strided))
    assert back.dtype == np.dtype("float64") and back.dtype.isnative and back.flags.writeable
    assert np.array_equal(back, strided) and back.shape == (3, 4)


def test_special_floats_and_text():
    value = [float("inf"), float("-inf"), float("nan"), -0.0, 1e-310, "Zoë ∑ \x00 \ud7ff", ""]
    assert same(value, decode(encode(value)))
    assert math.copysign(1, decode(encode(-0.0))) == -1


@pytest.mark.parametrize("value, name", [
    (lambda: 1, "function"),
    ({1, 2}, "set"),
    (b"bytes", "bytes"),
    (1 + 2j, "complex"),
    (np.ones(2, dtype=complex), "numpy.ndarray of complex128"),
    (np.array(["a"]), "numpy.ndarray of <U1"),
    (np.array([object()]), "numpy.ndarray of object"),
    (np.zeros((1,) * 9), "numpy.ndarray with 9 dimensions"),
    (2**64, "int beyond 64 bits"),
    ({1: "a"}, "dict with keys that are not str"),
    ((x for x in []), "generator"),
    (np.complex128(1j), "numpy.ndarray of complex128"),
])
def test_what_cannot_cross_is_named_by_its_type(value, name):
    assert decode(encode(value)) == Unsupported(name)
    assert decode(encode({"inside": [value]})) == {"inside": [Unsupported(name)]}


def test_a_value_too_deep_or_self_containing_is_cut_at_the_depth_limit():
    loop = []
    loop.append(loop)
    back = decode(encode(loop))
    for _ in range(frames.MAX_DEPTH - 1):
        back = back[0]
    assert back == [Unsupported(f"list nested more than {frames.MAX_DEPTH} levels deep")]


def test_encoding_refuses_too_many_items_or_too_much_text():
    with pytest.raises(FrameTooLarge):
        encode(list(range(frames.MAX_ITEMS + 1)))
    assert decode(encode("x" * (frames.MAX_TEXT + 1))) == Unsupported(f"str of {frames.MAX_TEXT + 1} characters")


def test_unsupported_itself_round_trips():
    assert decode(encode(Unsupported("a thing"))) == Unsupported("a thing")


# --- every rejection -----------------------------------------------------------------------

ARRAY = {"a": ["<f8", [2]]}
TWO_FLOATS = np.array([1.0, 2.0]).tobytes()


def test_a_well_formed_hand_made_frame_is_accepted():
    """The baseline the rejections below depart from."""
    assert np.array_equal(decode(body(ARRAY, TWO_FLOATS)), [1.0, 2.0])


@pytest.mark.parametrize("dtype", ["<c16", "|O", ">f8", "<U3", "<M8[s]", "|V8", "<f16", "float64", 7])
def test_dtypes_outside_the_whitelist(dtype):
    with pytest.raises(FrameError, match="dtype"):
        decode(body({"a": [dtype, [2]]}, TWO_FLOATS))


@pytest.mark.parametrize("shape", [[1] * 9, [-2], [2.0], ["2"], [True, 2], None, 2,
                                   [2**31], [2**62], [0, 10**19], [10**19, 0]])
def test_bad_shapes(shape):
    with pytest.raises(FrameError):
        decode(body({"a": ["<f8", shape]}, TWO_FLOATS))


@pytest.mark.parametrize("shape", [[3], [2**30, 2**30], [2**31 - 1] * 4])
def test_a_header_claiming_more_bytes_than_the_frame_holds_allocates_nothing(shape):
    tracemalloc.start()
    try:
        with pytest.raises(FrameError, match="bytes"):
            decode(body({"a": ["<f8", shape]}, TWO_FLOATS))
        assert tracemalloc.get_traced_memory()[1] < 1_000_000
    finally:
        tracemalloc.stop()


def test_bytes_left_over_after_the_arrays():
    with pytest.raises(FrameError, match="after the last array"):
        decode(body(ARRAY, TWO_FLOATS + b"\x00"))
    with pytest.raises(FrameError, match="after the last array"):
        decode(body(None, b"\x00"))


def test_bool_arrays_are_only_ever_true_or_false():
    back = decode(body({"a": ["|b1", [3]]}, b"\x00\x02\xff"))
    assert back.dtype == bool and back.tolist() == [False, True, True]
    assert back.view(np.uint8).tolist() == [0, 1, 1]


def test_a_frame_over_the_limit():
    data = encode(np.zeros(1000))
    with pytest.raises(FrameTooLarge):
        decode(data, limit=len(data) - 1)
    assert decode(data, limit=len(data)).shape == (1000,)


@pytest.mark.parametrize("raw", [
    b"", b"\x00\x00",                                   # shorter than the header length
    struct.pack(">I", 100) + b"{}",                     # header longer than the frame
    struct.pack(">I", frames.MAX_HEADER + 1) + b"x" * (frames.MAX_HEADER + 1),
])
def test_impossible_header_lengths(raw):
    with pytest.raises(FrameError):
        decode(raw)


@pytest.mark.parametrize("header, match", [
    (b"\xff\xfe", "unreadable"),                        # not UTF-8
    (b"[1,", "unreadable"),                             # not JSON
    (b"NaN", "constant"),                               # JSON's non-standard constants
    (b'{"l":[Infinity]}', "constant"),
    (b"1" * 30, "too long"),                            # an integer literal the size of a book
    (b"1e999", "non-finite"),
    (str(2**63).encode(), "int64"),
    (b"[1, 2]", "not tagged"),                          # a bare list is never written
    (b'{"x": 1}', "unknown"),
    (b'{"l": [], "d": []}', "not tagged"),
    (b'{"l": 1}', "unknown"),
    (b'{"d": [["k"]]}', "dict entry"),
    (b'{"d": [[1, 2]]}', "dict entry"),
    (b'{"f": "big"}', "unknown"),
    (b'{"u": 5}', "unknown"),
    (b'{"a": ["<f8"]}', "malformed array"),
])
def test_malformed_headers(header, match):
    with pytest.raises(FrameError, match=match):
        decode(body(header))


def test_nesting_beyond_the_depth_limit():
    deep = None
    for _ in range(frames.MAX_DEPTH):
        deep = {"l": [deep]}
    assert decode(body(deep)) is not None
    with pytest.raises(FrameError, match="nested"):
        decode(body({"l": [deep]}))
    with pytest.raises(FrameError, match="unreadable"):       # deeper than the JSON parser goes
        decode(body(b"[" * 100_000 + b"]" * 100_000))


def test_too_many_values():
    with pytest.raises(FrameError, match="too many values"):
        decode(body({"l": [0] * (4 * frames.MAX_ITEMS + 1)}))
    with pytest.raises(FrameError, match=f"more than {frames.MAX_ITEMS} values"):
        decode(body({"l": [{"l": []}] * (frames.MAX_ITEMS + 1)}))


def test_text_over_the_limit():
    long = "x" * (frames.MAX_TEXT + 1)
    for header in (long, {"d": [[long, 1]]}):
        with pytest.raises(FrameError, match="text limit"):
            decode(body(header))


# --- on file descriptors -------------------------------------------------------------------

def test_frames_through_a_pipe_and_a_clean_end():
    read_end, write_end = os.pipe()
    try:
        frames.write_frame(write_end, {"event": "values", "values": {"w": np.eye(3)}})
        frames.write_frame(write_end, [1, "two"])
        os.close(write_end)
        first = frames.read_frame(read_end)
        assert np.array_equal(first["values"]["w"], np.eye(3))
        assert frames.read_frame(read_end) == [1, "two"]
        assert frames.read_frame(read_end) is None
    finally:
        os.close(read_end)


def test_a_length_over_the_limit_is_refused_before_the_body_is_read():
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, struct.pack(">I", 2**31) + b"not read")   # writer still open: a read would block
        with pytest.raises(FrameTooLarge):
            frames.read_frame(read_end, limit=2**20)
        with pytest.raises(FrameTooLarge):
            list(FrameSplitter(limit=2**20).feed(struct.pack(">I", 2**20 + 1)))
        splitter = FrameSplitter(limit=2**20)       # the frames before a bad length still arrive
        arrived = []
        with pytest.raises(FrameTooLarge):
            arrived.extend(splitter.feed(frames.frame("first") + struct.pack(">I", 2**20 + 1)))
        assert [decode(b) for b in arrived] == ["first"]
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize("raw", [b"\x00\x00", struct.pack(">I", 10) + b"short"])
def test_an_end_of_file_inside_a_frame(raw):
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, raw)
        os.close(write_end)
        with pytest.raises(FrameError, match="end of file"):
            frames.read_frame(read_end)
    finally:
        os.close(read_end)


# --- text that is not Unicode ----------------------------------------------------------------

LONE = "\ud800"


@pytest.mark.parametrize("header", [
    b'"\\ud800"', b'"a\\udfffb"', b'{"l": ["ok", "\\udc00"]}',
    b'{"d": [["\\ud800", 1]]}', b'{"u": "x\\ud800"}',
])
def test_a_lone_surrogate_from_the_child_is_refused(header):
    """JSON can spell one, Python keeps it, and UTF-8 cannot encode it: stored later (the
    gradebook, a report) it would crash the grader. A surrogate pair is text and arrives."""
    with pytest.raises(FrameError, match="surrogate"):
        decode(body(header))
    assert decode(body(b'"\\ud83d\\ude00"')) == "\U0001F600"


def test_a_lone_surrogate_going_to_the_child_becomes_a_replacement_character():
    """A notebook cell's source or a label can hold one: the job must still go out."""
    value = {"source": f"x = '{LONE}'", f"key{LONE}": [f"a{LONE}\udfffb", Unsupported(f"T{LONE}")],
             "fine": "Zoë \U0001F600"}
    back = decode(encode(value))
    assert back == {"source": "x = '\ufffd'", "key\ufffd": ["a\ufffd\ufffdb", Unsupported("T\ufffd")],
                    "fine": "Zoë \U0001F600"}


# --- nothing but FrameError, whatever the bytes ----------------------------------------------

def decodes_or_refuses(data: bytes) -> None:
    try:
        decode(data)
    except FrameError:
        pass                    # anything else fails the test, which is the point


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_give_a_value_or_a_frame_error(data):
    decodes_or_refuses(data)
    decodes_or_refuses(struct.pack(">I", len(data)) + data)      # a plausible header length


@settings(max_examples=400, deadline=None)
@given(values, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255), st.sampled_from("flip cut put".split())),
                        min_size=1, max_size=6))
def test_mutated_frames_give_a_value_or_a_frame_error(value, mutations):
    data = bytearray(encode(value))
    for position, byte, how in mutations:
        position %= len(data) + 1
        if how == "flip" and position < len(data):
            data[position] = byte
        elif how == "cut":
            del data[position:]
        else:
            data[position:position] = bytes([byte])
        if not data:
            data = bytearray(b"\x00")
    decodes_or_refuses(bytes(data))


# header trees built from the tags the decoder knows, with numbers and strings that lie
lies = (st.integers(-(2**70), 2**70) | st.sampled_from([0, 1, 2**31 - 1, 2**31, 2**63, 10**19, -1])
        | st.floats() | st.text(max_size=5) | st.sampled_from(["<f8", "|b1", "<i8", "nan", "inf", "\ud800"])
        | st.none() | st.booleans())
trees = st.recursive(lies, lambda inner: (
    st.lists(inner, max_size=4)
    | st.builds(lambda tag, body: {tag: body}, st.sampled_from("ladfu"), inner)
    | st.builds(lambda d, s: {"a": [d, s]}, inner, st.lists(inner, max_size=4))
    | st.dictionaries(st.text(max_size=3), inner, max_size=3)), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(trees, st.binary(max_size=64))
def test_lying_headers_give_a_value_or_a_frame_error(tree, data):
    try:
        header = json.dumps(tree, allow_nan=True).encode()
    except (ValueError, UnicodeEncodeError):
        return
    decodes_or_refuses(body(header, data))


def test_a_zero_size_array_with_a_huge_dimension_is_a_frame_error():
    """numpy's reshape raised ValueError for it, which killed the process that decoded it."""
    for shape in ([0, 10**19], [10**19, 0], [0, 2**63 - 1]):
        with pytest.raises(FrameError, match="bad shape"):
            decode(body({"a": ["<f8", shape]}))
    assert decode(body({"a": ["<f8", [0, 2**31 - 1]]})).shape == (0, 2**31 - 1)


# --- arrays judged by shape, not by size alone ----------------------------------------------

def test_an_empty_array_whose_lists_would_be_too_many_is_named_and_the_rest_crosses():
    """``np.zeros((2**31 - 1, 0, 4))`` has size 0 and crossed; a trusted ``.tolist()`` then
    built 2**31 lists (the grader grew to 24 GB and was killed)."""
    value = {"empty": np.zeros((2**31 - 1, 0, 4)), "column": np.zeros((frames.MAX_ITEMS + 1, 1), dtype=bool),
             "wide": np.zeros((0, 2**31 - 1)), "fine": np.ones((3, 4)), "n": 1}
    back = decode(encode(value))
    assert back["empty"] == Unsupported("numpy.ndarray of shape (2147483647, 0, 4)")
    assert back["column"] == Unsupported(f"numpy.ndarray of shape ({frames.MAX_ITEMS + 1}, 1)")
    assert back["wide"].shape == (0, 2**31 - 1) and same(value["fine"], back["fine"]) and back["n"] == 1
    assert frames.nested_lists((2**31 - 1, 0, 4)) == 2**31 - 1 + 1 and frames.nested_lists(()) == 0
    long_name = decode(encode(np.zeros((2**31 - 1,) + (0,) * 7)))
    assert long_name.type_name.startswith("numpy.ndarray of shape (2147483647, 0,") and len(long_name.type_name) <= 200


def test_decode_refuses_an_array_whose_lists_would_be_too_many():
    """Only a forged frame can hold one (encode names it instead)."""
    tracemalloc.start()
    try:
        for shape in ([2**31 - 1, 0, 4], [frames.MAX_ITEMS + 1, 0], [frames.MAX_ITEMS, 1, 0]):
            with pytest.raises(FrameError, match="lists"):
                decode(body({"a": ["<f8", shape]}))
        assert tracemalloc.get_traced_memory()[1] < 1_000_000
    finally:
        tracemalloc.stop()
    assert decode(body({"a": ["<f8", [frames.MAX_ITEMS - 2, 0]]})).shape == (frames.MAX_ITEMS - 2, 0)   # (+1 value: itself)


def test_the_lists_of_many_arrays_count_together():
    """Each under the limit, together 30 times over it: as many lists, all the same."""
    many = [np.zeros((frames.MAX_ITEMS // 2, 0))] * 60
    with pytest.raises(FrameTooLarge, match="values"):
        encode(many)
    header = {"l": [{"a": ["<f8", [frames.MAX_ITEMS // 2, 0]]}] * 60}
    with pytest.raises(FrameError, match="values"):
        decode(body(header))


@pytest.mark.parametrize("event, step, case", [("start", 0, None), ("start", 46, 3), ("need", 7, 0),
                                               ("need", 2**31 - 1, 2**31 - 1)])
def test_small_events_decode_to_what_their_json_form_gives(event, step, case):
    small = frames.small_event(event, step, case)
    assert len(small) == 10 and small[0] == frames.SMALL_MARK
    expected = {"event": event, "step": step} if case is None else {"event": event, "step": step, "case": case}
    assert decode(small) == expected == decode(encode(expected))


@pytest.mark.parametrize("raw", [
    struct.pack(">BBii", 0xFF, 3, 0, -1),          # an unknown code
    struct.pack(">BBii", 0xFF, 0, 0, -1),
    struct.pack(">BBii", 0xFF, 1, -1, -1),          # a negative step
    struct.pack(">BBii", 0xFF, 2, 0, -2),           # a case below "none"
    struct.pack(">BBii", 0xFF, 1, 0, 0) + b"\0",    # not ten bytes: read as a JSON body (and refused)
    struct.pack(">BBii", 0xFF, 1, 0, 0)[:9],
])
def test_a_malformed_small_event_is_refused(raw):
    with pytest.raises(FrameError):
        decode(raw)
