"""The corpus job on Ray Data: the same stages as :func:`~specproof.corpus.pipeline.run_local`.

- the model stage is an actor pool (``map_batches`` with a callable class, ``concurrency=workers``):
  each actor holds one copy of each model pair's models and turns one unit (document) into its
  node records;
- the exact stage is stateless tasks over batches of node records;
- the driver collects node laws per unit and writes the unit's shard as soon as it is complete (a
  rerun skips the units whose shard exists).

``address=None`` starts a new local cluster with ``num_cpus=2`` (no dashboard; never one found
through ``RAY_ADDRESS`` or a running ``ray start``) and shuts it down at the end; an address joins
that cluster (one started with token authentication needs ``RAY_AUTH_MODE=token`` and its token
in the environment, as Ray documents); an already initialized Ray is used as it is. Needs the
``corpus`` extra (``ray[data]``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .pipeline import Config, combine_unit, exact_records, infer_unit, write_shard

__all__ = ["run_ray", "LOCAL_CPUS"]

#: CPUs of the local cluster ``--ray`` starts.
LOCAL_CPUS = 2
_COLUMNS = ("unit", "n_nodes", "key", "dtype", "p", "q", "children")


def _columns(records: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for n in names:
        values = [r[n] for r in records]
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        out[n] = arr
    return out


def _records(batch: dict[str, Any]) -> list[dict[str, Any]]:
    names = list(batch)
    size = len(batch[names[0]]) if names else 0
    out = []
    for i in range(size):
        r = {}
        for n in names:
            v = batch[n][i]
            r[n] = v.item() if isinstance(v, np.generic) else v
        out.append(r)
    return out


class _Infer:
    """The model stage's actor: models load once per actor (on first use of each pair)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        records: list[dict[str, Any]] = []
        for row in _records(batch):
            records.extend(infer_unit(json.loads(row["unit"]), self.cfg))
        return _columns(records, _COLUMNS)


def _exact(batch: dict[str, Any]) -> dict[str, Any]:
    recs = _records(batch)
    for r in recs:
        r["p"], r["q"] = bytes(r["p"]), bytes(r["q"])
    return _columns(exact_records(recs), ("unit", "n_nodes", "key", "law"))


def run_ray(
    units: list[dict[str, Any]],
    cfg: Config,
    out: Path,
    *,
    address: str | None = None,
    workers: int = 2,
    batch_size: int = 8,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Run the stages on Ray Data and write each unit's shard as it completes.

    Parameters
    ----------
    units : list of dict
        The units to compute (:func:`~specproof.corpus.pipeline.plan`'s second result).
    cfg : Config
    out : path
        The output directory (shards go to ``out/shards``).
    address : str or None
        None: a local cluster with :data:`LOCAL_CPUS` CPUs (unless Ray is already initialized);
        otherwise the address of a running cluster.
    workers : int
        Actors of the model stage (each holds one copy of the models).
    batch_size : int
        ContextNode records per exact task.
    progress : callable, optional
        Called with each unit when its shard is written.
    """
    import ray

    if not units:
        return
    started = False
    if not ray.is_initialized():
        if address is None:
            # "local": always a new cluster; neither RAY_ADDRESS nor a running `ray start` redirects it
            ray.init(address="local", num_cpus=LOCAL_CPUS, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
        started = True
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        by_id = {f"{u['pair']}#{u['doc']}": u for u in units}
        items = ray.data.from_items([{"unit": json.dumps(u)} for u in units], override_num_blocks=len(units))
        ds = items.map_batches(_Infer, fn_constructor_args=(cfg,), batch_size=1, concurrency=workers, num_cpus=0.5)
        ds = ds.map_batches(_exact, batch_size=batch_size, num_cpus=0.5)
        pending: dict[str, list[dict[str, Any]]] = {}
        for row in ds.iter_rows():
            uid = row["unit"]
            pending.setdefault(uid, []).append({"key": row["key"], "law": row["law"]})
            if len(pending[uid]) == int(row["n_nodes"]):
                unit = by_id[uid]
                write_shard(unit, combine_unit(unit, pending.pop(uid), cfg), out)
                if progress is not None:
                    progress(unit)
        if pending:
            raise RuntimeError(f"Ray Data returned incomplete units: {sorted(pending)}")
    finally:
        if started:
            ray.shutdown()
