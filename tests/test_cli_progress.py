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


def test_prove_bar_ends_at_100_percent_or_is_never_drawn(tmp_path, capsys, monkeypatch):
    # a new user's trap (issue 34): `prove --target --draft` left "checking: 33%" (and "transcript: 67%", with no
    # newline) on standard error: set_description redrew the bar before its delay, and close never finished it
    from specproof.cli import _common

    (tmp_path / "p.json").write_text("[0.5, 0.3, 0.2]")
    (tmp_path / "q.json").write_text("[0.4, 0.4, 0.2]")
    argv = ["prove", "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "q.json"), "--out", str(tmp_path)]
    assert main(argv) == 0  # ends within DELAY (2 s): no bar at all
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(_common, "DELAY", 0)  # shown from the start
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.endswith("\n") and "3/3 [" in err.splitlines()[-1].split("\r")[-1]  # the last state drawn is 100%
    assert err.splitlines()[-1].split("\r")[-1].startswith("transcript: 100%")
    assert main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_a_bar_is_made_only_after_the_delay_and_starts_from_the_count(monkeypatch, capsys):
    # tqdm is imported and drawn only once DELAY has passed: a command that ends sooner never pays for it
    from specproof.cli import _common

    now = [100.0]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    monkeypatch.setattr(_common, "QUIET", False)  # as main sets it without --quiet
    bar = _common._bar(total=5, desc="checking", unit="certificate")
    bar.update(2)
    bar.set_description("still checking")
    assert bar._shown is None and bar.n == 2 and capsys.readouterr().err == ""
    now[0] += _common.DELAY
    bar.update(1)  # the bar is made now, at 3 of 5, with the description given before it was
    assert bar._shown is not None and bar._shown.n == 3
    bar.update(2)
    bar.close()
    last = capsys.readouterr().err.splitlines()[-1].split("\r")[-1]
    assert last.startswith("still checking: 100%") and "5/5 [" in last
    assert list(_common._bar(iterable=[7, 8])) == [7, 8]
