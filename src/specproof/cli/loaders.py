"""Read target or draft distributions from the files people have, exactly or by the float policy.

Formats, by suffix:

=================  ===========================================================================
``.json``          a list of numbers (or strings holding an integer, ``"n/d"`` or a decimal),
                   or a list of such lists ([N, V]); UTF-8 (with or without a byte-order
                   mark), UTF-16 or UTF-32, as :mod:`json` detects them
``.csv``           one row or one column of values (a header cell that is not a number is an
                   error: write values only)
``.npy``           a 1-D or 2-D float or integer array
``.safetensors``   one 1-D or 2-D tensor (needs the ``safetensors`` package)
``.pt``, ``.pth``  one tensor saved with ``torch.save`` (needs ``torch``; read with
                   ``weights_only=True``, so no code in the file runs)
anything else      text: one value per line; blank lines and ``#`` comments skipped
=================  ===========================================================================

Which values are exact. A vector whose entries are all integers or ``"n/d"`` fractions is
exact as written (``[0, 1, 0]`` is the one-hot vector, exactly). As soon as one entry is a
decimal or floating-point number, the vector is a float vector: its integer entries are
floats too (``[0.5, 0.5, 0]`` is three floats, as every JSON writer prints a float zero), and
all of them are made exact by :func:`specproof.laws.rational.from_floats` (policy
``dyadic-renormalize``), which the certificate records. A float vector with an ``"n/d"``
fraction in it is refused: a fraction cannot be a float without rounding. The decision is made
once per file, so every row of an [N, V] file is exact or every row is floats.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import importlib.util
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specproof.errors import InvalidDistribution
from specproof.laws.rational import DEFAULT_FLOAT_ATOL, RationalVector, as_distribution, from_floats

__all__ = ["Distributions", "load_distributions", "load_distribution", "FORMATS"]

#: The formats read, by suffix (anything else is read as text, one value per line).
FORMATS = {".json": "json", ".csv": "csv", ".npy": "npy", ".safetensors": "safetensors", ".pt": "pt", ".pth": "pt"}

_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")
_FRACTION = re.compile(r"\s*[+-]?[0-9]+\s*/\s*[0-9]+\s*")
# floats with at most 2^53 in magnitude hold every integer exactly
_EXACT_INT_LIMIT = 2**53


@dataclass(frozen=True)
class Distributions:
    """The rows read from one file.

    Attributes
    ----------
    vectors : tuple of RationalVector
        N >= 1 validated distributions (each sums to exactly 1), all of length V.
    floats : tuple of numpy.ndarray or None
        For a float file, the float rows (1-D, the file's dtype, at most 64 bits) that
        ``vectors`` were made exact from; ``None`` for an exact file.
    batched : bool
        True iff the file held a 2-D [N, V] array (even with N = 1).
    provenance : dict
        ``{"file": name, "format": ..., "sha256": hex digest}``, plus ``"shape"`` ([N, V]) for a
        2-D file and ``"tensor"`` for a named tensor of a ``.safetensors`` or ``.pt`` file.
    degenerate : tuple of (str or None)
        With ``keep_degenerate``: for each row, why it is degenerate (NaN, +/-inf, all zero; see
        :func:`specproof.rules.faithful.degenerate`) or None; such a row's entry of ``vectors``
        is None (it has no law) and its floats are kept as read. Empty otherwise.
    """

    vectors: tuple[RationalVector | None, ...]
    floats: tuple[np.ndarray, ...] | None
    batched: bool
    provenance: dict[str, Any]
    degenerate: tuple[str | None, ...] = ()

    @property
    def vocab_size(self) -> int:
        """V, the length of every row."""
        if self.floats is not None:
            return len(self.floats[0])
        exact = self.vectors[0]
        assert exact is not None  # an exact file: only a float row can be degenerate
        return len(exact)


def _decode(data: bytes, what: str) -> str:
    """Text of a file: UTF-8 (a byte-order mark dropped), or UTF-16/UTF-32 with a byte-order mark."""
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError:
                raise InvalidDistribution(
                    f"{what} starts with a {codec.upper()} byte-order mark but is not {codec.upper()} text"
                ) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidDistribution(f"{what} is not UTF-8 (or UTF-16/UTF-32 with a byte-order mark) text") from None


def _cell(item: Any, where: str) -> int | float | str:
    """One entry as an int, a float or an ``"n/d"`` string; anything else is refused."""
    if isinstance(item, bool) or item is None:
        raise InvalidDistribution(f"{where} is {json.dumps(item)}, not a number")
    if isinstance(item, (int, float)):
        return item
    if isinstance(item, str):
        if _INTEGER.fullmatch(item):
            return int(item)
        if _FRACTION.fullmatch(item):
            return item
        try:
            return float(item)
        except ValueError:
            pass
    shown = item if isinstance(item, str) else type(item).__name__
    raise InvalidDistribution(f"{where} is {str(shown)[:60]!r}, not a number or an 'n/d' fraction")


def _rows_from_cells(rows: list[list[Any]], what: str) -> tuple[list[list[Any]], bool]:
    """Apply the module's rule: exact as written, or (one float present) every entry a float."""
    floats = any(isinstance(x, float) for row in rows for x in row)
    if not floats:
        return rows, False
    out = []
    for i, row in enumerate(rows):
        converted = []
        for j, x in enumerate(row):
            where = f"{what}, row {i}, entry {j}" if len(rows) > 1 else f"{what}, entry {j}"
            if isinstance(x, str):
                raise InvalidDistribution(
                    f"{where} is the fraction {x.strip()!r} in a vector of decimal floats; write every entry "
                    "as 'n/d' (exact) or every entry as a decimal number (made exact by the dyadic-renormalize policy)"
                )
            if isinstance(x, int) and abs(x) > _EXACT_INT_LIMIT:
                raise InvalidDistribution(f"{where} is the integer {x}, which a float64 cannot hold exactly")
            converted.append(float(x))
        out.append(converted)
    return out, True


def _text_cells(text: str, what: str) -> list[Any]:
    values: list[Any] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        item = line.split("#", 1)[0].strip()
        if item:
            values.append(_cell(item, f"{what}, line {lineno}"))
    return values


def _csv_cells(text: str, what: str) -> list[Any]:
    """One row or one column of a CSV file (blank lines and empty trailing cells ignored)."""
    try:
        table = [[c.strip() for c in row] for row in csv.reader(io.StringIO(text))]
    except csv.Error as exc:
        raise InvalidDistribution(f"{what} is not a readable CSV file: {exc}") from None
    table = [row[: max((k + 1 for k, c in enumerate(row) if c), default=0)] for row in table]
    table = [row for row in table if row]
    if not table:
        raise InvalidDistribution(f"{what} is an empty CSV file")
    width = max(len(row) for row in table)
    if len(table) > 1 and width > 1:
        raise InvalidDistribution(
            f"{what} is a CSV table of {len(table)} rows and up to {width} columns; a CSV distribution is "
            "one row or one column of values (for N distributions at once, use a 2-D .npy or a JSON list of lists)"
        )
    cells = table[0] if len(table) == 1 else [row[0] for row in table]
    out = []
    for k, c in enumerate(cells):
        where = f"{what}, CSV {'column' if len(table) == 1 else 'row'} {k + 1}"
        if not c:
            raise InvalidDistribution(f"{where} is empty")
        out.append(_cell(c, where))
    return out


def _json_rows(data: bytes, what: str) -> tuple[list[list[Any]], bool]:
    try:  # as the checker reads JSON: UTF-8 (a byte-order mark allowed), UTF-16 or UTF-32, detected
        values = json.loads(data)
    except UnicodeDecodeError:
        raise InvalidDistribution(f"{what} is not JSON text in UTF-8, UTF-16 or UTF-32") from None
    except (ValueError, RecursionError) as exc:
        raise InvalidDistribution(f"{what} is not valid JSON: {exc!s:.200}") from None
    if not isinstance(values, list) or not values:
        raise InvalidDistribution(f"{what} is not a non-empty JSON list (of numbers, or of lists of numbers)")
    if all(isinstance(v, list) for v in values):
        lengths = {len(v) for v in values}
        if len(lengths) != 1:
            raise InvalidDistribution(
                f"{what} is a list of lists of different lengths {sorted(lengths)}; an [N, V] array needs equal rows"
            )
        return [
            [_cell(x, f"{what}, row {i}, entry {j}") for j, x in enumerate(row)] for i, row in enumerate(values)
        ], True
    if any(isinstance(v, list) for v in values):
        raise InvalidDistribution(f"{what} mixes numbers and lists; write a list of numbers or a list of equal lists")
    return [[_cell(x, f"{what}, entry {j}") for j, x in enumerate(values)]], False


def _array_rows(arr: np.ndarray, what: str) -> tuple[list[Any], bool, bool]:
    """Rows of a 1-D or 2-D numeric array: (rows, is_float, batched)."""
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise InvalidDistribution(f"{what} has shape {list(arr.shape)}; expected [V] or [N, V] with N, V >= 1")
    batched = arr.ndim == 2
    rows = list(arr) if batched else [arr]
    if arr.dtype.kind == "f":
        return rows, True, batched
    if arr.dtype.kind in "iu":
        return [row.tolist() for row in rows], False, batched
    raise InvalidDistribution(f"{what} has dtype {arr.dtype}, not a float or integer array")


def _missing(package: str, suffix: str, install: str) -> InvalidDistribution:
    return InvalidDistribution(
        f"reading a {suffix} file needs the '{package}' package, which is not installed: {install} "
        "(or save the distribution as .npy, .json, .csv or text)"
    )


def _safetensors_array(file: Path, what: str) -> tuple[np.ndarray, str]:
    try:
        from safetensors import safe_open
    except ImportError:
        raise _missing("safetensors", ".safetensors", "python -m pip install safetensors") from None
    try:
        with safe_open(str(file), framework="numpy") as handle:
            keys = list(handle.keys())
            if len(keys) != 1:
                raise InvalidDistribution(
                    f"{what} holds {len(keys)} tensors {keys[:10]}; save exactly one (the distribution)"
                )
            try:
                return handle.get_tensor(keys[0]), keys[0]
            except (TypeError, ValueError):  # bfloat16 has no NumPy dtype
                pass
        if importlib.util.find_spec("torch") is None:
            raise InvalidDistribution(
                f"{what}: tensor {keys[0]!r} has a dtype NumPy cannot hold (bfloat16?); "
                "reading it needs 'torch' (python -m pip install torch, or specproof's 'models' extra)"
            )
        with safe_open(str(file), framework="pt") as handle:
            return _torch_numpy(handle.get_tensor(keys[0]), what), keys[0]
    except InvalidDistribution:
        raise
    except Exception as exc:  # safetensors raises its own SafetensorError for a damaged header
        raise InvalidDistribution(f"{what} is not a readable .safetensors file: {exc!s:.200}") from None


def _torch_numpy(tensor: Any, what: str) -> np.ndarray:
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise InvalidDistribution(f"{what} holds a {type(tensor).__name__}, not a tensor")
    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.to(torch.float32)  # exact: every bfloat16 is a float32
    try:
        return tensor.numpy()
    except (TypeError, RuntimeError) as exc:
        raise InvalidDistribution(f"{what} has dtype {tensor.dtype}, which NumPy cannot hold: {exc!s:.100}") from None


def _torch_array(file: Path, what: str) -> tuple[np.ndarray, str | None]:
    try:
        import torch
    except ImportError:
        raise _missing("torch", ".pt", "python -m pip install torch (or specproof's 'models' extra)") from None
    try:
        obj = torch.load(str(file), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds (pickle, zip, weights-only refusals)
        raise InvalidDistribution(
            f"{what} is not a readable .pt tensor file: {type(exc).__name__}: {exc!s:.200}"
        ) from None
    key = None
    if isinstance(obj, dict):
        if len(obj) != 1:
            raise InvalidDistribution(
                f"{what} holds a dict of {len(obj)} entries; save one tensor (or a dict of exactly one)"
            )
        key, obj = next(iter(obj.items()))
        key = str(key)
    return _torch_numpy(obj, what), key


def load_distributions(
    path: str | Path,
    name: str = "p",
    *,
    atol: float = DEFAULT_FLOAT_ATOL,
    atol_name: str = "atol",
    keep_degenerate: bool = False,
) -> Distributions:
    """Read one distribution, or an [N, V] stack of them, from ``path``.

    Parameters
    ----------
    path : str or pathlib.Path
        A file in one of :data:`FORMATS` (see the module docstring), or text.
    name : str, optional
        ``"p"`` or ``"q"``, used in error messages.
    atol : float, optional
        Tolerance on a float row's sum, as :func:`~specproof.laws.rational.from_floats`.
    atol_name : str, optional
        How a message names the tolerance (the command line passes ``"--atol"``).
    keep_degenerate : bool, optional
        Keep a float row with a NaN or infinite entry, or all zero, instead of refusing it: its
        entry of ``vectors`` is None and ``degenerate`` says why (for commands that report what a
        verifier emits on such a row, as vLLM #53029's all-NaN row). Default False.

    Returns
    -------
    Distributions
        ``vectors`` of N exact distributions of length V, the float rows if the file held
        floats, whether it was 2-D, and its provenance.

    Raises
    ------
    InvalidDistribution
        The file cannot be read or parsed (the message names the format: JSON, CSV...), a
        ``.safetensors`` or ``.pt`` file without its package installed (the message names the
        package), an entry that is not a number, a fraction among floats, more than two
        dimensions, or a row that is not a probability vector (negative entries, an exact
        row not summing to 1, a float row off from 1 by more than ``atol``).

    Notes
    -----
    All-integer rows stay exact; one float in a file makes every entry of it a float (see
    the module docstring).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "p.json")
    >>> _ = open(path, "w").write("[0.5, 0.5, 0]")
    >>> d = load_distributions(path)
    >>> d.vectors[0].fractions(), d.vectors[0].policy.name, d.batched
    ((Fraction(1, 2), Fraction(1, 2), Fraction(0, 1)), 'dyadic-renormalize', False)
    """
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InvalidDistribution(f"cannot read {name} from {file}: {exc.strerror}") from None
    what = f"{name} ({file})"
    fmt = FORMATS.get(file.suffix.lower(), "text")
    info: dict[str, Any] = {"file": file.name, "format": fmt, "sha256": hashlib.sha256(data).hexdigest()}
    if fmt in ("npy", "safetensors", "pt"):
        if fmt == "npy":
            try:
                arr = np.load(io.BytesIO(data), allow_pickle=False)
            except (OSError, ValueError, MemoryError, EOFError) as exc:
                raise InvalidDistribution(f"{what} is not a readable .npy array: {type(exc).__name__}") from None
            key = None
        elif fmt == "safetensors":
            arr, key = _safetensors_array(file, what)
        else:
            arr, key = _torch_array(file, what)
        if key is not None:
            info["tensor"] = key
        rows, is_float, batched = _array_rows(np.asarray(arr), what)
    else:
        if fmt == "json":
            cells, batched = _json_rows(data, what)
        elif fmt == "csv":
            cells, batched = [_csv_cells(_decode(data, what), what)], False
        else:
            cells, batched = [_text_cells(_decode(data, what), what)], False
        if not cells[0]:
            raise InvalidDistribution(f"{what} has no values: a distribution needs V >= 1 entries")
        rows, is_float = _rows_from_cells(cells, what)
        if is_float:
            rows = [np.array(row, dtype=np.float64) for row in rows]
    if batched:
        info["shape"] = [len(rows), len(rows[0])]
    vectors: list[RationalVector | None] = []
    why_degenerate: list[str | None] = []
    for i, row in enumerate(rows):
        label = f"{name}[{i}]" if batched else name
        if keep_degenerate and is_float:
            from specproof.rules.faithful import degenerate

            why_degenerate.append(degenerate(row))
            if why_degenerate[-1] is not None:
                vectors.append(None)
                continue
        try:
            vectors.append(from_floats(row, atol=atol, name=label) if is_float else as_distribution(row, label))
        except InvalidDistribution as exc:  # name the file, and the tolerance as the caller knows it
            message = str(exc)
            if atol_name != "atol" and f"atol={atol!r}" in message:
                message = (
                    message.replace(f"atol={atol!r}", f"{atol_name} {atol!r}") + f" (a larger {atol_name} accepts it)"
                )
            raise type(exc)(f"{file.name}: {message}") from None
    floats = tuple(np.asarray(r) for r in rows) if is_float else None
    return Distributions(tuple(vectors), floats, batched, info, tuple(why_degenerate) if keep_degenerate else ())


def load_distribution(
    path: str | Path, name: str = "p", *, atol: float = DEFAULT_FLOAT_ATOL
) -> tuple[RationalVector, dict[str, Any]]:
    """Load exactly one distribution from ``path`` and describe where it came from.

    Parameters
    ----------
    path : str or pathlib.Path
        As :func:`load_distributions`; the file must hold one row ([V], or [1, V]).
    name : str, optional
        ``"p"`` or ``"q"``, used in error messages.
    atol : float, optional
        Tolerance passed to :func:`~specproof.laws.rational.from_floats` for float entries.

    Returns
    -------
    vector : RationalVector
        Exact, validated (sums to exactly 1); ``policy`` set if floats were converted.
    provenance : dict
        ``{"file": name, "sha256": hex digest, "format": "json" | "csv" | "npy" | ... | "text"}``.

    Raises
    ------
    InvalidDistribution
        As :func:`load_distributions`, or a file of more than one row.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "q.txt")
    >>> _ = open(path, "w").write("1/4\\n3/4\\n")
    >>> load_distribution(path, "q")[0].fractions()
    (Fraction(1, 4), Fraction(3, 4))
    """
    loaded = load_distributions(path, name, atol=atol)
    if len(loaded.vectors) != 1:
        raise InvalidDistribution(f"{name} ({path}) holds {len(loaded.vectors)} rows, not one distribution")
    vector = loaded.vectors[0]
    assert vector is not None  # degenerate rows are refused, not kept (no keep_degenerate)
    return vector, loaded.provenance
