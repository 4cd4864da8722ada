"""Tests for specproof.cli.loaders: reading p or q from .json, .npy and text files."""

import json
from fractions import Fraction

import numpy as np
import pytest

from specproof.cli.loaders import load_distribution
from specproof.errors import InvalidDistribution


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
        ("mixed.json", json.dumps(["1/2", 0.5]), "entry 0 is the fraction '1/2' in a vector of decimal floats"),
        ("obj.json", json.dumps({"a": 1}), "not a non-empty JSON list"),
        ("bad.json", "[1,", "not valid JSON"),
        ("sum.json", json.dumps(["1/2", "1/3"]), "p sums to 5/6, not 1"),
        ("word.txt", "1/2\nhalf\n", "line 2 is 'half', not a number"),
        ("bin.txt", b"\x80\x81", "not UTF-8"),
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


# ---------------------------------------------------------------- everyday files (issue 10, item 2)

import codecs  # noqa: E402
import sys  # noqa: E402

from specproof.cli.loaders import load_distributions  # noqa: E402

HALF_HALF_ZERO = (Fraction(1, 2), Fraction(1, 2), Fraction(0))


def test_integers_in_a_float_json_vector_are_floats(tmp_path):
    # exactly what json.dumps([0.5, 0.5, 0.0]) in other languages (and by hand) looks like
    path = tmp_path / "p.json"
    path.write_text("[0.5, 0.5, 0]")
    vec, info = load_distribution(path)
    assert vec.fractions() == HALF_HALF_ZERO
    assert vec.policy.name == "dyadic-renormalize" and vec.policy.float_sum == 1
    assert info["format"] == "json"


def test_zero_line_in_a_float_text_file(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("0.25\n0\n0.75\n")
    vec, _ = load_distribution(path, "q")
    assert vec.fractions() == (Fraction(1, 4), Fraction(0), Fraction(3, 4)) and vec.policy is not None


def test_all_integer_vector_stays_exact(tmp_path):
    path = tmp_path / "onehot.json"
    path.write_text("[0, 1, 0]")
    vec, _ = load_distribution(path)
    assert vec.fractions() == (0, 1, 0) and vec.policy is None


def test_float_vector_refuses_an_integer_a_float_cannot_hold(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(f"[0.5, {2**53 + 1}]")
    with pytest.raises(
        InvalidDistribution, match="entry 1 is the integer 9007199254740993, which a float64 cannot hold"
    ):
        load_distribution(path)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be", "utf-16-le", "utf-32"])
def test_json_with_a_byte_order_mark_or_in_utf16(tmp_path, encoding):
    # "utf-16" and "utf-32" write a byte-order mark, "utf-16-be" and "-le" none: json detects all
    path = tmp_path / "p.json"
    path.write_bytes('["1/2", "1/2", 0]'.encode(encoding))
    assert load_distribution(path)[0].fractions() == HALF_HALF_ZERO


def test_text_in_utf16_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "p.txt"
    path.write_bytes(codecs.BOM_UTF16_BE + "1/2\n1/2\n0\n".encode("utf-16-be"))
    assert load_distribution(path)[0].fractions() == HALF_HALF_ZERO


def test_bom_json_exact_bytes(tmp_path):
    path = tmp_path / "p.json"
    path.write_bytes(b"\xef\xbb\xbf[0.5, 0.5, 0]")
    assert load_distribution(path)[0].fractions() == HALF_HALF_ZERO


@pytest.mark.parametrize(
    "content", ["0.5,0.5,0\n", "0.5\n0.5\n0\n", "1/2,1/2,0", "\ufeff1/2\r\n1/2\r\n0\r\n", "0.5, 0.5, 0,,\n\n"]
)
def test_csv_one_row_or_one_column(tmp_path, content):
    path = tmp_path / "p.csv"
    path.write_text(content, newline="")
    vec, info = load_distribution(path)
    assert vec.fractions() == HALF_HALF_ZERO and info["format"] == "csv"


@pytest.mark.parametrize(
    "content, message",
    [
        ("0.5,0.5\n0.5,0.5\n", "CSV table of 2 rows and up to 2 columns"),
        ("p\n0.5\n0.5\n", r"CSV row 1 is 'p', not a number"),
        ("0.5,,0.5\n", "CSV column 2 is empty"),
        ("", "empty CSV file"),
    ],
)
def test_csv_refusals_say_csv(tmp_path, content, message):
    path = tmp_path / "p.csv"
    path.write_text(content)
    with pytest.raises(InvalidDistribution, match=message):
        load_distribution(path)


def test_two_dimensional_arrays_are_stacks(tmp_path):
    np.save(tmp_path / "p.npy", np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]]))
    loaded = load_distributions(tmp_path / "p.npy")
    assert loaded.batched and loaded.provenance["shape"] == [2, 3]
    assert [v.fractions() for v in loaded.vectors] == [HALF_HALF_ZERO, (Fraction(1, 4), Fraction(1, 4), Fraction(1, 2))]
    (tmp_path / "p.json").write_text('[["1/2", "1/2", 0], [0, 0, 1]]')
    loaded = load_distributions(tmp_path / "p.json")
    assert loaded.floats is None and [v.fractions() for v in loaded.vectors] == [HALF_HALF_ZERO, (0, 0, 1)]
    with pytest.raises(InvalidDistribution, match="holds 2 rows"):
        load_distribution(tmp_path / "p.json")
    (tmp_path / "ragged.json").write_text("[[0.5, 0.5], [1]]")
    with pytest.raises(InvalidDistribution, match="different lengths"):
        load_distributions(tmp_path / "ragged.json")
    np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2)))
    with pytest.raises(InvalidDistribution, match=r"shape \[2, 2, 2\]"):
        load_distributions(tmp_path / "cube.npy")
    (tmp_path / "row1.json").write_text("[0.5, 0.5], [1]")
    with pytest.raises(InvalidDistribution, match="not valid JSON"):
        load_distributions(tmp_path / "row1.json")


def test_a_bad_row_of_a_stack_is_named(tmp_path):
    np.save(tmp_path / "p.npy", np.array([[0.5, 0.5], [0.5, 0.6]]))
    with pytest.raises(InvalidDistribution, match=r"p\[1\] sums to 1.1"):
        load_distributions(tmp_path / "p.npy")


def test_safetensors(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    safetensors_numpy.save_file({"probs": np.array([0.5, 0.5, 0.0], dtype=np.float32)}, str(tmp_path / "p.safetensors"))
    vec, info = load_distribution(tmp_path / "p.safetensors")
    assert vec.fractions() == HALF_HALF_ZERO and info["tensor"] == "probs" and info["format"] == "safetensors"
    safetensors_numpy.save_file(
        {"a": np.ones(2, np.float32), "b": np.ones(2, np.float32)}, str(tmp_path / "two.safetensors")
    )
    with pytest.raises(InvalidDistribution, match="holds 2 tensors"):
        load_distribution(tmp_path / "two.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"\x00" * 3)
    with pytest.raises(InvalidDistribution, match="not a readable .safetensors"):
        load_distribution(tmp_path / "bad.safetensors")


def test_safetensors_bfloat16_and_pt(tmp_path):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    # 0.5, 0.25 and 0.25 are exact in bfloat16; the [2, 3] stack holds two rows
    rows = torch.tensor([[0.5, 0.25, 0.25], [0.0, 0.5, 0.5]], dtype=torch.bfloat16)
    safetensors_torch.save_file({"p": rows}, str(tmp_path / "p.safetensors"))
    loaded = load_distributions(tmp_path / "p.safetensors")
    assert loaded.batched and [v.fractions() for v in loaded.vectors] == [
        (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)),
        (0, Fraction(1, 2), Fraction(1, 2)),
    ]
    torch.save(torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64), tmp_path / "p.pt")
    assert load_distribution(tmp_path / "p.pt")[0].fractions() == HALF_HALF_ZERO
    torch.save({"q": torch.tensor([1, 0])}, tmp_path / "q.pt")
    vec, info = load_distribution(tmp_path / "q.pt", "q")
    assert vec.fractions() == (1, 0) and vec.policy is None and info["tensor"] == "q"
    (tmp_path / "junk.pt").write_bytes(b"junk")
    with pytest.raises(InvalidDistribution, match="not a readable .pt tensor file"):
        load_distribution(tmp_path / "junk.pt")


@pytest.mark.parametrize("module, suffix", [("safetensors", ".safetensors"), ("torch", ".pt")])
def test_missing_package_is_named(tmp_path, monkeypatch, module, suffix):
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now raises ImportError
    path = tmp_path / f"p{suffix}"
    path.write_bytes(b"anything")
    with pytest.raises(InvalidDistribution, match=f"needs the '{module}' package, which is not installed"):
        load_distribution(path)
