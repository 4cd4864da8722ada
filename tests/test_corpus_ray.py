"""specproof corpus on Ray Data: byte-identical to the in-process run, shards resume.

One local cluster (2 CPUs, no dashboard) is shared by the module; the slow test starts a head node
with ``ray start`` and runs ``specproof corpus --ray ADDRESS`` against it. Skipped where ray is not installed,
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
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
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


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def head_node(tmp_path_factory):
    """A Ray head node started by ``ray start --head`` (2 CPUs) in its own process group, with token
    authentication (its own token file), and the environment a client needs to join it; the group
    is terminated, then killed, at the end. Its temporary directory is its own, so the address file
    it writes never redirects another process's ``ray.init()``."""
    import secrets
    import shutil
    import signal
    import subprocess
    import sys
    import tempfile
    import time
    from pathlib import Path

    ray_bin = Path(sys.executable).with_name("ray")
    ray_cmd = str(ray_bin) if ray_bin.exists() else shutil.which("ray")
    if ray_cmd is None:  # pragma: no cover - ray[data] installs the script
        pytest.fail("the ray command is not installed beside the Python running the tests")
    temp = Path(tempfile.mkdtemp(prefix="spray-", dir="/tmp"))  # short: Ray's socket paths are limited
    token = tmp_path_factory.mktemp("auth") / "token"
    token.write_text(secrets.token_hex(32))
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    port = _free_port()
    cmd = [
        ray_cmd,
        "start",
        "--head",
        "--num-cpus",
        "2",
        "--node-ip-address",
        "127.0.0.1",
        "--port",
        str(port),
        "--dashboard-port",
        str(_free_port()),
        "--dashboard-agent-listen-port",
        str(_free_port()),
        "--include-dashboard",
        "false",
        "--disable-usage-stats",
        "--temp-dir",
        str(temp),
    ]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    group = proc.pid  # every process of the node is in this group (the one we started)

    try:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"ray start failed:\n{out}"
        yield {"address": f"127.0.0.1:{port}", "env": env, "temp": temp}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # SIGTERM, and SIGKILL after 5 s (the GCS server and the raylet take about 10 s to stop on
        # SIGTERM; a test cluster needs no graceful drain). Left over: zombies, which init reaps.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            if sig == signal.SIGTERM:
                time.sleep(5)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
def test_ray_address_joins_a_running_cluster_and_gives_byte_identical_parquet(head_node, tmp_path):
    """``specproof corpus --ray ADDRESS`` (a separate process, as a user runs it) on a head node started
    by ``ray start``: the same bytes as the in-process run."""
    import subprocess
    import sys

    from specproof.cli import main

    text = tmp_path / "text.txt"
    text.write_text(TEXT, encoding="utf-8")
    common = ["corpus", "--pair", "phone", "--text", str(text), "--gamma-max", "3"]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "specproof",
            *common,
            "--out",
            str(tmp_path / "joined"),
            "--ray",
            head_node["address"],
            "--workers",
            "2",
        ],
        env=head_node["env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, err[-3000:]
    for name in ("corpus.parquet", "summary.json"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "joined" / name).read_bytes()
    shards = sorted(p.name for p in (tmp_path / "local" / "shards").iterdir())
    assert len(shards) == 3 and shards == sorted(p.name for p in (tmp_path / "joined" / "shards").iterdir())
    # the job ran on that cluster: its driver's log is in the head node's session, named by its pid
    assert list(head_node["temp"].glob(f"session_*/logs/python-core-driver-*_{run.pid}.log"))
