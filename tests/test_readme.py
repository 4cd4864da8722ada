"""README.md stays short and true: its quick start runs as written, its commands are CI's, its links exist."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end >= 0 else len(README)]


def _command_after(text: str, lead: str) -> str:
    """The indented command line of the first paragraph that starts with ``lead``."""
    rest = text[text.index(lead) :]
    return re.search(r"^    (\S.*)$", rest, re.MULTILINE).group(1)


def test_readme_is_short():
    assert len(README.splitlines()) < 250


def test_the_test_command_is_the_one_ci_runs():
    command = _command_after(README, "Tests")
    assert command.endswith("python -m pytest") and "'.[test,models]'" in command
    assert command in CI.splitlines()
    assert command in (ROOT / "docs" / "running.md").read_text(encoding="utf-8")


def test_the_main_job_and_the_docs_build_are_the_ones_ci_runs():
    job = _command_after(README, "Main job")
    assert job == "python -m pip install -e . && specproof prove"
    assert "specproof prove)" in CI and job in (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    docs = _command_after(README, "Documentation")
    install, build = docs.split(" && ")
    assert install in CI and build in CI and " -W " in build


def test_links_to_files_exist():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        assert (ROOT / link).is_file(), link


@pytest.mark.slow  # a pytest subprocess importing torch; CI's slow run
def test_quick_start_runs_as_written(tmp_path):
    pytest.importorskip("torch")
    quick = _section("Quick start")
    assert "python -m pip install -e '.[test,models]'" in quick
    code = re.search(r"```python\n(.*?)```", quick, re.DOTALL).group(1)
    name = re.search(r"`(test_\w+\.py)`", quick).group(1)
    (tmp_path / name).write_text(code, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


@pytest.mark.slow  # a subprocess importing torch; CI's slow run
def test_differential_example_runs_as_written(tmp_path):
    pytest.importorskip("torch")
    quick = _section("Quick start")
    blocks = re.findall(r"```python\n(.*?)```", quick, re.DOTALL)
    code = next(b for b in blocks if "reference=plain" in b)
    (tmp_path / "differential.py").write_text(code, encoding="utf-8")
    run = subprocess.run([sys.executable, "differential.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == ["lossless", "lossy 1/4"]  # what the comments say


def test_the_emitted_law_example_is_the_first_and_runs_as_written():
    import doctest

    first = README.index("\n## ")
    assert README.index("## The emitted law in one call") == first + 1  # before the tracer's quick start
    block = re.search(r"```python\n(.*?)```", _section("The emitted law in one call"), re.DOTALL).group(1)
    test = doctest.DocTestParser().get_doctest(block, {}, "README", "README.md", 0)
    result = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS).run(test)
    assert result.attempted == 5 and result.failed == 0
