"""Tests for specproof.loaders: reading p or q from .json, .npy and text files."""

import json
from fractions import Fraction

import numpy as np
import pytest

from specproof.errors import InvalidDistribution
from specproof.loaders import load_distribution


def test_json_exact(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(["1/3", "2/3", 0]))
    vec, info = load_distribution(path)
    assert vec.fractions() == (Fraction(1, 3), Fraction(2, 3), Fraction(0))
    assert vec.policy is None
    assert info["format"] == "json" and info["file"] == "p.json" and len(info["sha256"]) == 64


def test_json_floats_use_the_policy(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([0.1, 0.9]))
    vec, _ = load_distribution(path, "q")
    assert vec.policy.name == "dyadic-renormalize"
    total = Fraction(0.1) + Fraction(0.9)
    assert vec.fractions() == (Fraction(0.1) / total, Fraction(0.9) / total)


def test_npy_and_text(tmp_path):
    np.save(tmp_path / "p.npy", np.array([0.25, 0.75], dtype=np.float32))
    vec, info = load_distribution(tmp_path / "p.npy")
    assert vec.fractions() == (Fraction(1, 4), Fraction(3, 4)) and info["format"] == "npy"
    (tmp_path / "p.txt").write_text("# target\n1/4\n\n3/4  # last\n")
    vec, info = load_distribution(tmp_path / "p.txt")
    assert vec.fractions() == (Fraction(1, 4), Fraction(3, 4)) and vec.policy is None
    (tmp_path / "f.txt").write_text("0.5\n0.5\n")
    assert load_distribution(tmp_path / "f.txt")[0].policy is not None


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("mixed.json", json.dumps(["1/2", 0.5]), "mixes exact entries and floats"),
        ("obj.json", json.dumps({"a": 1}), "not a JSON list"),
        ("bad.json", "[1,", "not valid JSON"),
        ("sum.json", json.dumps(["1/2", "1/3"]), "p sums to 5/6, not 1"),
        ("word.txt", "1/2\nhalf\n", r"line 2\): 'half' is not a number"),
        ("bin.txt", b"\xff\xfe", "not UTF-8"),
        ("bad.npy", b"not numpy", "not a readable .npy"),
    ],
)
def test_bad_files(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InvalidDistribution, match=message):
        load_distribution(path)


def test_missing_file(tmp_path):
    with pytest.raises(InvalidDistribution, match="cannot read q"):
        load_distribution(tmp_path / "nope.json", "q")
