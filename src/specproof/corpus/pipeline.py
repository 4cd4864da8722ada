"""The corpus job's stages, run in process (:func:`run_local`) or on Ray Data (:mod:`.ray`).

1. :func:`plan`: text -> units (one document of one model pair each), minus the units whose
   shard already exists (a rerun resumes).
2. :func:`infer_unit` (model stage; on Ray an actor pool, one model copy per actor): the rows at
   every node the exact stage needs (float32 logits or float64 rows, as bytes).
3. :func:`exact_records` (exact stage; on Ray tasks over batches of nodes): each node's exact
   :class:`~specproof.corpus.job.ContextNode`.
4. :func:`combine_unit`: per position, alpha and the E[emitted] bounds per gamma; written as the
   unit's shard (:func:`write_shard`) as soon as the unit is complete.
5. :func:`finish`: every shard, in order, into one Parquet file; the summary and the plots.

Both runners call the same functions on the same inputs, so the shards and the final file are
byte-identical (pyarrow writes them with fixed options).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..laws.rational import format_fraction
from .job import GRID_BITS, context_hash, emitted_bounds, node_from_record, node_law, node_record

__all__ = [
    "Config",
    "plan",
    "infer_unit",
    "exact_records",
    "combine_unit",
    "write_shard",
    "shard_path",
    "run_local",
    "finish",
    "SCHEMA_VERSION",
]

SCHEMA_VERSION = "specproof.corpus/1"
#: How prefixes are chosen for exploration (part of every shard's key: shards made another way are not resumed).
EXPLORE_VERSION = "best-first/any-depth/1"


@dataclass(frozen=True)
class Config:
    """What a corpus job computes (the same in process and on Ray)."""

    pairs: tuple[str, ...] = ("phone", "smollm2")
    gamma_max: int = 6
    mass_bound: float = 0.05
    max_explore: int = 16
    bits: int = GRID_BITS
    cost_ratio: str = "1/20"
    extra: dict = field(default_factory=dict)


_SOURCES: dict[str, Any] = {}


def source(name: str) -> Any:
    """One source object per pair name and process (models load once)."""
    if name not in _SOURCES:
        from .sources import make_source

        _SOURCES[name] = make_source(name)
    return _SOURCES[name]


def default_text() -> str:
    """The text shipped with the package (``specproof/corpus/data/default.txt``, written for it)."""
    from importlib import resources

    return resources.files(__package__).joinpath("data/default.txt").read_text(encoding="utf-8")


def unit_key(unit: dict[str, Any], cfg: Config) -> str:
    """A digest of everything a unit's shard depends on: the pair, the document's token ids and the
    settings of the exact work. A rerun with another text or other settings computes afresh; it
    never resumes from a shard made for different inputs."""
    settings = {
        "pair": unit["pair"],
        "ids": [int(i) for i in unit["ids"]],
        "gamma_max": cfg.gamma_max,
        "mass_bound": cfg.mass_bound,
        "max_explore": cfg.max_explore,
        "bits": cfg.bits,
        "explore": EXPLORE_VERSION,
        "extra": cfg.extra,
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def shard_path(out: Path, unit: dict[str, Any]) -> Path:
    safe = unit["pair"].replace("/", "_").replace(",", "_")
    return Path(out) / "shards" / f"{safe}-{unit['doc']:05d}-{unit['key']}.parquet"


def plan(text: str, cfg: Config, out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """All units, and those whose shard is missing (to compute)."""
    units = []
    for pair in cfg.pairs:
        for doc, ids in enumerate(source(pair).documents(text)):
            unit = {"pair": pair, "doc": doc, "ids": ids}
            unit["key"] = unit_key(unit, cfg)
            units.append(unit)
    todo = [u for u in units if not shard_path(out, u).exists()]
    return units, todo


def infer_unit(unit: dict[str, Any], cfg: Config) -> list[dict[str, Any]]:
    """The model stage: one record per node, rows as bytes (dtype kept), with the unit's id and size."""
    reqs = source(unit["pair"]).requests(unit["ids"], cfg.gamma_max, cfg.mass_bound, cfg.max_explore)
    uid = f"{unit['pair']}#{unit['doc']}"
    return [
        {
            "unit": uid,
            "n_nodes": len(reqs),
            "key": r["key"],
            "dtype": str(np.asarray(r["p"]).dtype),
            "p": np.ascontiguousarray(r["p"]).tobytes(),
            "q": np.ascontiguousarray(r["q"]).tobytes(),
            "children": json.dumps(r["children"]),
        }
        for r in reqs
    ]


def exact_records(records: Iterable[dict[str, Any]], progress: Any = None) -> list[dict[str, Any]]:
    """The exact stage: each node record -> its exact law as JSON (big integers as strings);
    ``progress()`` (optional) is called after each node."""
    from .sources import rows_to_probs

    out = []
    for r in records:
        pair = r["unit"].rsplit("#", 1)[0]
        src = source(pair)
        dtype = np.dtype(r["dtype"])
        p = rows_to_probs(src, np.frombuffer(r["p"], dtype=dtype))
        q = rows_to_probs(src, np.frombuffer(r["q"], dtype=dtype))
        node = node_law(p, q, json.loads(r["children"]), atol=src.atol)
        out.append({"unit": r["unit"], "n_nodes": r["n_nodes"], "key": r["key"], "law": json.dumps(node_record(node))})
        if progress is not None:
            progress()
    return out


def combine_unit(unit: dict[str, Any], laws: Iterable[dict[str, Any]], cfg: Config) -> list[dict[str, Any]]:
    """Per position of the unit: alpha exact and float, E[emitted] bounds per gamma = 1..gamma_max."""
    src = source(unit["pair"])
    table = {r["key"]: node_from_record(json.loads(r["law"])) for r in laws}
    ids = unit["ids"]
    lookup, child, root = src.tree(ids, table)
    memo: dict = {}
    rows = []
    labels = getattr(src, "labels", None)
    for t in range(src.start, len(ids)):
        key = root(t)
        node = lookup(key)
        bounds = emitted_bounds(key, cfg.gamma_max, lookup, child, memo, cfg.bits)
        explored = sum(1 for k in table if k.startswith(f"{t}:"))
        rows.append(
            {
                "pair": unit["pair"],
                "doc": unit["doc"],
                "position": t,
                "token": int(ids[t]),
                "token_text": labels[ids[t]] if labels else "",
                "context_hash": context_hash(unit["pair"], ids[:t]),
                "alpha": format_fraction(node.alpha),
                "alpha_float": node.alpha_float,
                "alpha_exact_float": float(node.alpha),
                "e_lo": [format_fraction(lo) for lo, _ in bounds],
                "e_hi": [format_fraction(hi) for _, hi in bounds],
                "e_lo_float": [float(lo) for lo, _ in bounds],
                "e_hi_float": [float(hi) for _, hi in bounds],
                "explored": explored,
            }
        )
    return rows


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("pair", pa.string()),
            ("doc", pa.int32()),
            ("position", pa.int32()),
            ("token", pa.int32()),
            ("token_text", pa.string()),
            ("context_hash", pa.string()),
            ("alpha", pa.string()),
            ("alpha_float", pa.float64()),
            ("alpha_exact_float", pa.float64()),
            ("e_lo", pa.list_(pa.string())),
            ("e_hi", pa.list_(pa.string())),
            ("e_lo_float", pa.list_(pa.float64())),
            ("e_hi_float", pa.list_(pa.float64())),
            ("explored", pa.int32()),
        ]
    )


def _write(rows: list[dict[str, Any]], path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=_schema())
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp, compression="zstd", use_dictionary=False, write_statistics=False)
    tmp.replace(path)  # a shard exists only when complete: a rerun never reads half a file
    return path


def write_shard(unit: dict[str, Any], rows: list[dict[str, Any]], out: Path) -> Path:
    """Write one unit's rows as its shard (atomically: a temporary file, then a rename)."""
    return _write(rows, shard_path(out, unit))


def run_local(units: list[dict[str, Any]], cfg: Config, out: Path, progress: Any = None, stage: Any = None) -> None:
    """Run the stages in this process, one unit after another. ``progress(unit)`` (optional) is
    called after each unit; ``stage(text, total)`` (optional) when a stage of a unit starts, and
    returns a callable called after each of its ``total`` steps (or None)."""
    for unit in units:
        uid = f"{unit['pair']}#{unit['doc']}"
        if stage is not None:
            stage(f"{uid}: model ({len(unit['ids'])} tokens)", None)
        records = infer_unit(unit, cfg)
        step = None if stage is None else stage(f"{uid}: exact laws", len(records))
        laws = exact_records(records, progress=step)
        write_shard(unit, combine_unit(unit, laws, cfg), out)
        if progress is not None:
            progress(unit)


def read_rows(out: Path, units: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every unit's shard rows, in unit order."""
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for u in units:
        rows.extend(pq.read_table(shard_path(out, u), schema=_schema()).to_pylist())
    return rows


def finish(units: list[dict[str, Any]], cfg: Config, out: Path) -> dict[str, Any]:
    """Concatenate the shards into ``corpus.parquet``; write ``summary.json``/``summary.md`` and the plots."""
    from .summary import summarize, write_summary

    rows = read_rows(out, units)
    _write(rows, Path(out) / "corpus.parquet")
    summary = summarize(rows, cfg)
    write_summary(summary, rows, cfg, Path(out))
    return summary
