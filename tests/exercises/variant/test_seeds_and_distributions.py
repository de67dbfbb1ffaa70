"""Per-student seeds (HMAC-SHA256 → PCG64) and the seeded parameter distributions."""

import hashlib
import hmac
import json

import numpy as np
import pytest

from exercises.variant.seeds import generator, variant_seed
from exercises.template.distributions import DISTRIBUTIONS, VOCABULARY
from exercises.template.model import TemplateError
from exercises.variant.draw import make_variant
from tests.exercises.templates import fast, inline, numeric

BASE = ("course-secret", "hw3", "alice", "sdpa_four_tokens")


# --- seeds -----------------------------------------------------------------------------------

def test_variant_seed_is_deterministic_and_256_bit():
    seed = variant_seed(*BASE)
    assert seed == variant_seed(*BASE)
    assert 0 <= seed < 2 ** 256
    assert seed.bit_length() > 200  # a full-width digest, not a small number


def test_variant_seed_is_hmac_sha256_of_the_json_framed_fields():
    """Pinned: changing the framing would silently change every student's numbers."""
    message = json.dumps(["hw3", "alice", "sdpa_four_tokens"], separators=(",", ":")).encode()
    digest = hmac.new(b"course-secret", message, hashlib.sha256).digest()
    assert variant_seed(*BASE) == int.from_bytes(digest, "big")
    assert message == b'["hw3","alice","sdpa_four_tokens"]'


def test_text_and_bytes_secrets_agree():
    assert variant_seed(b"course-secret", *BASE[1:]) == variant_seed(*BASE)


@pytest.mark.parametrize("position, other", [
    (0, "other-secret"), (1, "hw4"), (2, "bob"), (3, "implement_masked_attention"),
])
def test_variant_seed_differs_when_any_input_differs(position, other):
    changed = list(BASE)
    changed[position] = other
    assert variant_seed(*changed) != variant_seed(*BASE)


def test_no_collision_when_text_moves_between_fields():
    secret = "s"
    assert variant_seed(secret, "ab", "c", "p") != variant_seed(secret, "a", "bc", "p")
    assert variant_seed(secret, "a", "bc", "p") != variant_seed(secret, "a", "b", "cp")
    assert variant_seed(secret, "a,b", "c", "p") != variant_seed(secret, "a", "b,c", "p")
    assert variant_seed(secret, 'a","b', "c", "p") != variant_seed(secret, "a", 'b","c', "p")


def test_unicode_names_are_fine():
    assert variant_seed("s", "hw", "zoë", "p") != variant_seed("s", "hw", "zoe", "p")


@pytest.mark.parametrize("secret", ["", b""])
def test_empty_secret_is_refused(secret):
    with pytest.raises(ValueError, match="the course secret is empty"):
        variant_seed(secret, "hw3", "alice", "p")


def test_generator_is_pcg64_seeded_by_the_seed():
    seed = variant_seed(*BASE)
    a, b = generator(seed), generator(seed)
    assert isinstance(a.bit_generator, np.random.PCG64)
    assert np.array_equal(a.random(8), b.random(8))
    expected = np.random.Generator(np.random.PCG64(seed)).random(4)
    assert np.array_equal(generator(seed).random(4), expected)
    assert not np.array_equal(generator(seed).random(4), generator(seed + 1).random(4))
    with pytest.raises(ValueError, match="non-negative"):
        generator(-1)


# --- distributions ------------------------------------------------------------------------------

def sample(name, seed=0, **options):
    return DISTRIBUTIONS[name].sample(generator(seed), **options)


def test_the_distributions_are_the_documented_seven():
    assert list(DISTRIBUTIONS) == ["integers", "int_matrix", "choice", "uniform", "normal",
                                   "sentence", "permutation"]


def test_integers_bounds_are_inclusive():
    rng = generator(1)
    draws = {DISTRIBUTIONS["integers"].sample(rng, low=-2, high=2) for _ in range(400)}
    assert draws == {-2, -1, 0, 1, 2}
    assert all(type(d) is int for d in draws)


def test_integers_with_shape_and_exclude():
    x = sample("integers", low=0, high=3, shape=[50, 4], exclude=[2])
    assert x.shape == (50, 4) and x.dtype == np.int64
    assert set(np.unique(x)) == {0, 1, 3}
    assert sample("integers", low=5, high=5) == 5


@pytest.mark.parametrize("options, message", [
    ({"low": 3, "high": 2}, "high (2) is below low (3)"),
    ({"low": 1, "high": 2, "exclude": [1, 2]}, "every value between low and high is excluded"),
    ({"low": 0, "high": 1, "shape": [2000, 1000]}, "is negative or too large"),
    # 2**64 entries: a product that wraps to 0 in int64 (np.prod) must still be too large
    ({"low": 0, "high": 1, "shape": [2**32, 2**32]}, "is negative or too large"),
])
def test_integers_refuses_impossible_options(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sample("integers", **options)


def test_int_matrix_is_float64_with_whole_entries_in_range():
    x = sample("int_matrix", shape=[40, 5])
    assert x.dtype == np.float64 and x.shape == (40, 5)
    assert np.array_equal(x, np.round(x))
    assert set(np.unique(x)) == {-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0}  # default ±3, inclusive
    y = sample("int_matrix", shape=[30, 3], low=0, high=1, exclude=[0])
    assert np.all(y == 1.0)


def test_choice():
    values = [2, 3, 4]
    assert sample("choice", values=values) in values
    seen = {DISTRIBUTIONS["choice"].sample(generator(s), values=values) for s in range(40)}
    assert seen == set(values)
    picks = sample("choice", values=["a", "b", "c", "d"], size=4, replace=False)
    assert isinstance(picks, list) and sorted(picks) == ["a", "b", "c", "d"]
    assert len(sample("choice", values=[1, 2], size=6)) == 6
    with pytest.raises(ValueError, match="cannot choose 3 distinct values from 2"):
        sample("choice", values=[1, 2], size=3, replace=False)
    with pytest.raises(ValueError, match="values is empty"):
        sample("choice", values=[])


def test_uniform_range_shape_and_decimals():
    x = sample("uniform", low=-1, high=2, shape=[1000])
    assert x.dtype == np.float64 and x.shape == (1000,)
    assert x.min() >= -1 and x.max() < 2
    assert x.min() < -0.9 and x.max() > 1.9  # it covers the range
    r = sample("uniform", low=0, high=1, shape=[3, 4], decimals=2)
    assert np.array_equal(r, np.round(r, 2)) and r.shape == (3, 4)
    scalar = sample("uniform", low=0, high=1, decimals=1)
    assert type(scalar) is float and scalar == round(scalar, 1)


def test_normal_mean_std_and_decimals():
    x = sample("normal", mean=5, std=2, shape=[20000])
    assert x.dtype == np.float64
    assert abs(x.mean() - 5) < 0.05 and abs(x.std() - 2) < 0.05
    r = sample("normal", shape=[2, 3], decimals=1)
    assert r.shape == (2, 3) and np.array_equal(r, np.round(r, 1))
    assert type(sample("normal")) is float


@pytest.mark.parametrize("length", [2, 3, 4, 5, 6])
def test_sentence_words_come_from_the_vocabulary(length):
    patterns = {2: ["noun", "verb"], 3: ["determiner", "noun", "verb"],
                4: ["determiner", "noun", "verb", "adverb"],
                5: ["determiner", "adjective", "noun", "verb", "adverb"],
                6: ["determiner", "adjective", "noun", "verb", "adverb", "adverb"]}
    for seed in range(30):
        words = sample("sentence", seed=seed, length=length)
        assert len(words) == length
        assert all(w in VOCABULARY[part] for w, part in zip(words, patterns[length]))
        assert len(set(words)) == length  # distinct by default


def test_sentence_default_length_and_custom_vocabulary():
    assert len(sample("sentence")) == 4
    vocabulary = ["I", "love", "attention", "heads"]
    words = sample("sentence", length=4, vocabulary=vocabulary)
    assert sorted(words) == sorted(vocabulary)
    repeated = [sample("sentence", seed=s, length=6, vocabulary=["x", "y"], distinct=False)
                for s in range(3)]
    assert all(set(w) <= {"x", "y"} and len(w) == 6 for w in repeated)
    with pytest.raises(ValueError, match="2 to 6 words"):
        sample("sentence", length=7)


def test_permutation():
    p = sample("permutation", n=6)
    assert sorted(p) == list(range(6))
    assert all(type(i) is int for i in p)
    orders = {tuple(sample("permutation", seed=s, n=6)) for s in range(10)}
    assert len(orders) > 1


@pytest.mark.parametrize("name, options", [
    ("integers", {"low": 0, "high": 9, "shape": [3]}),
    ("int_matrix", {"shape": [2, 2]}),
    ("choice", {"values": list(range(10)), "size": 3}),
    ("uniform", {"low": 0, "high": 1, "shape": [3]}),
    ("normal", {"shape": [3]}),
    ("sentence", {"length": 5}),
    ("permutation", {"n": 8}),
])
def test_every_distribution_is_a_function_of_the_seed(name, options):
    a, b = sample(name, seed=42, **options), sample(name, seed=42, **options)
    assert np.array_equal(np.asarray(a), np.asarray(b))
    draws = [np.asarray(sample(name, seed=s, **options)).tolist() for s in range(6)]
    assert len({json.dumps(d) for d in draws}) > 1


# --- size limits of the distributions ------------------------------------------------------------

def test_integers_with_a_huge_range_are_fast():
    template = inline(numeric("k: {dist: integers, low: 0, high: 2000000000}\n"
                              "ks: {dist: integers, low: -2000000000, high: 2000000000, shape: [3]}\n",
                              "k"))
    with fast(2.0):
        values = [make_variant(template, seed).values["k"] for seed in range(5)]
    assert all(0 <= k <= 2_000_000_000 for k in values)
    assert len(set(values)) > 1


def test_integers_with_exclude_and_a_huge_range_is_a_template_error_quickly():
    template = inline(numeric("k: {dist: integers, low: 0, high: 2000000000, exclude: [1]}\n", "k"))
    with fast(2.0):
        with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: parameters\.k: "):
            make_variant(template, 0)
    with fast(2.0):
        with pytest.raises(ValueError):
            DISTRIBUTIONS["integers"].sample(np.random.default_rng(0), low=0,
                                             high=2_000_000_000, exclude=[1])


def test_a_huge_permutation_is_a_template_error_quickly():
    template = inline(numeric("order: {dist: permutation, n: 1000000000}\n", "1.0"))
    with fast(2.0):
        with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: parameters\.order: "):
            make_variant(template, 0)
