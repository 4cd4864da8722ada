"""Progress on standard error for the long commands, also to a file or pipe; --quiet silences it (issue 34)."""

from __future__ import annotations

import pytest

from specproof.cli import main


@pytest.mark.parametrize("argv", [["crosscheck", "--pairs", "20"], ["crosscheck", "--pairs", "20", "--json"]])
def test_progress_goes_to_stderr_even_when_it_is_not_a_terminal(capsys, argv, monkeypatch):
    from specproof.cli import _common

    monkeypatch.setattr(_common, "DELAY", 0)  # shown from the start (a real run waits 2 s before its first bar)
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "0/20 [" in captured.err  # tqdm's first state, written although stderr is captured (no terminal)
    assert captured.out.startswith(("crosscheck: 20 pairs", '{"alpha"'))  # standard output is the result alone
    # to a file, the bar's last state is its final one: a log never ends on a state the run went past
    assert captured.err.rstrip().endswith("]") and "20/20 [" in captured.err.splitlines()[-1].split("\r")[-1]


@pytest.mark.parametrize("quiet", ["--quiet", "-q"])
def test_quiet_silences_progress_and_information(capsys, quiet):
    assert main(["crosscheck", "--pairs", "20", quiet]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.startswith("crosscheck: 20 pairs")


def test_every_subcommand_takes_quiet(capsys):
    from specproof.cli import COMMANDS, _parser

    parser = _parser("*")
    for name in COMMANDS:
        sub = parser._subparsers._group_actions[0].choices[name]
        assert any("--quiet" in a.option_strings for a in sub._actions), name
