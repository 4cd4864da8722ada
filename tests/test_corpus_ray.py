"""specproof corpus on Ray Data: byte-identical to the in-process run, shards resume.

One local cluster (2 CPUs, no dashboard) is shared by the module. Skipped where ray is not installed,
unless SPECPROOF_REQUIRE_RAY=1 (set by .ci/run, which installs the corpus extra): then it fails.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pocketsphinx")
pytest.importorskip("pyarrow")
try:
    import ray
except ImportError:  # pragma: no cover - depends on the environment
    if os.environ.get("SPECPROOF_REQUIRE_RAY") == "1":
        raise
    pytest.skip("ray is not installed (pip install 'specproof[corpus]')", allow_module_level=True)

from specproof.corpus.pipeline import Config, finish, plan, run_local, shard_path
from specproof.corpus.ray import run_ray

TEXT = "The cat sat on the mat.\n\nA dog ran home before the rain.\n\nShe sells sea shells."
CFG = Config(pairs=("phone",), gamma_max=3)


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_gives_byte_identical_parquet_and_resumes(cluster, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "ray"
    units, todo = plan(TEXT, CFG, local)
    run_local(todo, CFG, local)
    finish(units, CFG, local)
    units_r, todo_r = plan(TEXT, CFG, remote)
    seen = []
    run_ray(todo_r[:2], CFG, remote, workers=2, progress=seen.append)
    assert sorted(u["doc"] for u in seen) == [0, 1]
    assert [u["doc"] for u in plan(TEXT, CFG, remote)[1]] == [2]  # resumes: only the missing shard is left
    run_ray(plan(TEXT, CFG, remote)[1], CFG, remote, workers=1)
    finish(units_r, CFG, remote)
    for u in units:
        assert shard_path(local, u).read_bytes() == shard_path(remote, u).read_bytes()
    assert (local / "corpus.parquet").read_bytes() == (remote / "corpus.parquet").read_bytes()
    assert (local / "summary.json").read_bytes() == (remote / "summary.json").read_bytes()
