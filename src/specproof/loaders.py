"""Read a target or draft distribution from a file, exactly or by the stated float policy.

Formats: a ``.json`` list of ``"n/d"`` strings or numbers, a ``.npy`` array, or any other file
as text with one value per line (blank lines and ``#`` comments skipped). Exact entries
(integers, ``"n/d"``) stay exact; if the entries are floats, all of them are made exact by
:func:`specproof.rational.from_floats` (policy ``dyadic-renormalize``), which is recorded.
A file that mixes exact entries and floats is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InvalidDistribution
from .rational import DEFAULT_FLOAT_ATOL, RationalVector, as_distribution, from_floats

__all__ = ["load_distribution"]

_EXACT = re.compile(r"\s*[+-]?[0-9]+\s*(/\s*[0-9]+\s*)?")


def _from_values(values: list[Any], name: str, where: str, atol: float) -> RationalVector:
    kinds = {"float" if isinstance(v, float) else "exact" for v in values}
    if kinds == {"float", "exact"}:
        raise InvalidDistribution(
            f"{name} ({where}) mixes exact entries and floats; write all entries as 'n/d' or all as floats"
        )
    if kinds == {"float"}:
        return from_floats(np.array(values, dtype=np.float64), atol=atol, name=name)
    return as_distribution(values, name)


def _text_values(text: str, name: str, where: str) -> list[Any]:
    values: list[Any] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        item = line.split("#", 1)[0].strip()
        if not item:
            continue
        if _EXACT.fullmatch(item):
            values.append(item)
            continue
        try:
            values.append(float(item))
        except ValueError:
            raise InvalidDistribution(f"{name} ({where}, line {lineno}): {item!r} is not a number") from None
    return values


def load_distribution(path: str | Path, name: str = "p", *, atol: float = DEFAULT_FLOAT_ATOL) -> tuple[RationalVector, dict[str, Any]]:
    """Load one distribution from ``path`` and describe where it came from.

    Parameters
    ----------
    path : str or pathlib.Path
        ``.json`` (a list of ``"n/d"`` strings, integers or floats), ``.npy`` (a 1-D float or
        integer array) or a text file with one value per line.
    name : str, optional
        ``"p"`` or ``"q"``, used in error messages.
    atol : float, optional
        Tolerance passed to :func:`~specproof.rational.from_floats` for float entries.

    Returns
    -------
    vector : RationalVector
        Exact, validated (sums to exactly 1); ``policy`` set if floats were converted.
    provenance : dict
        ``{"file": name, "sha256": hex digest, "format": "json" | "npy" | "text"}``.

    Raises
    ------
    InvalidDistribution
        Unreadable or malformed file, mixed exact and float entries, or entries that are not
        a probability vector (as :func:`~specproof.rational.as_distribution` or
        :func:`~specproof.rational.from_floats`).
    """
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InvalidDistribution(f"cannot read {name} from {file}: {exc.strerror}") from None
    where = str(file)
    suffix = file.suffix.lower()
    if suffix == ".npy":
        fmt = "npy"
        try:
            arr = np.load(file, allow_pickle=False)
        except (OSError, ValueError, MemoryError) as exc:
            raise InvalidDistribution(f"{name} ({where}) is not a readable .npy array: {type(exc).__name__}") from None
        if arr.dtype.kind == "f":
            vec = from_floats(arr, atol=atol, name=name)
        elif arr.ndim == 1 and arr.dtype.kind in "iu":
            vec = as_distribution(arr.tolist(), name)
        else:
            raise InvalidDistribution(f"{name} ({where}) has dtype {arr.dtype} and shape {arr.shape}, not a 1-D number array")
    elif suffix == ".json":
        fmt = "json"
        try:
            values = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise InvalidDistribution(f"{name} ({where}) is not valid JSON: {type(exc).__name__}") from None
        if not isinstance(values, list):
            raise InvalidDistribution(f"{name} ({where}) is not a JSON list")
        vec = _from_values(values, name, where, atol)
    else:
        fmt = "text"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidDistribution(f"{name} ({where}) is not UTF-8 text") from None
        vec = _from_values(_text_values(text, name, where), name, where, atol)
    return vec, {"file": file.name, "format": fmt, "sha256": hashlib.sha256(data).hexdigest()}
