"""examples/engines/_wheel.py's download: one line on standard error before a download, none from the cache
(issue 34: the harnesses printed nothing for the minutes vLLM's wheel takes). pip is stubbed: nothing is
downloaded."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "engines"))

import _wheel  # noqa: E402


def test_a_download_says_which_wheel_and_its_size_first_and_a_cached_wheel_says_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPECPROOF_ENGINE_CACHE", str(tmp_path))
    calls = []

    def download(name, version, where):  # pip download, stubbed: a small wheel written into the cache
        calls.append((name, version, capsys.readouterr().err))  # what was said before the download began
        with zipfile.ZipFile(where / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
            wheel.writestr("vllm/v1/sample/rejection_sampler.py", "X = 1\n")
        return subprocess.CompletedProcess(["pip"], 0, "", "")

    monkeypatch.setattr(_wheel, "download", download)
    root = _wheel.wheel_files("vllm", "0.33.0", ["vllm/v1/sample/"])
    where = tmp_path / "vllm==0.33.0"
    assert calls == [("vllm", "0.33.0", f"downloading vllm==0.33.0 wheel (about 336 MB) into {where} ...\n")]
    assert (root / "vllm/v1/sample/rejection_sampler.py").read_text() == "X = 1\n"
    assert capsys.readouterr().err == ""
    assert _wheel.wheel_files("vllm", "0.33.0", ["vllm/v1/sample/"]) == root  # cached: no download, no line
    assert len(calls) == 1 and capsys.readouterr().err == ""
    _wheel.wheel_files("unmeasured", "1.0", ["vllm/"])  # a wheel the table does not list says so
    assert (
        calls[-1][2]
        == f"downloading unmeasured==1.0 wheel (size not measured) into {tmp_path / 'unmeasured==1.0'} ...\n"
    )


def test_every_harness_wheel_has_its_size():
    harnesses = Path(__file__).resolve().parents[1] / "examples" / "engines"
    pinned = set()
    for path in harnesses.glob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("NAME, VERSION = "):
                name, version = (part.strip().strip('"') for part in line.split("=", 1)[1].split(","))
                pinned.add((name, version))
    downloaded = pinned - {("transformers", "5.24.0")}  # the installed transformers is used: no download
    assert downloaded and downloaded <= set(_wheel.WHEEL_MB)
