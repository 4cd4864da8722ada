"""The command line's start: only the subcommand being run is imported, and its help table is true."""

import subprocess
import sys

from specproof import cli


def _help_lines(parser):
    action = next(a for a in parser._actions if a.dest == "command")
    return {choice.dest: choice.help for choice in action._choices_actions}


def test_the_help_table_is_each_modules_own_help():
    assert _help_lines(cli._parser("*")) == {name: help_line for name, (_, help_line) in cli.COMMANDS.items()}
    assert _help_lines(cli._parser()) == _help_lines(cli._parser("*"))


def test_the_command_is_the_first_word_that_is_not_an_option():
    assert cli._command(["--json", "check", "x.json"]) == "check"
    assert cli._command(["--version"]) is None and cli._command(["nope", "check"]) is None


def test_version_and_help_import_no_subcommand():
    code = (
        "import sys; from specproof.cli import main; main(['--version']); main(['--help']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'sympy', 'torch', 'jinja2', 'tqdm') "
        "or m.startswith(('specproof.cli.', 'specproof.laws', 'specproof.certify'))))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip().splitlines()[-1] == "['specproof.cli._common']"


def test_check_of_a_certificate_imports_no_numpy_sympy_or_jinja(tmp_path):
    # the checker is standard library only, and check's start follows it (issue 34: CPU before any work); tqdm is
    # imported only when a bar is drawn, after 2 s
    from pathlib import Path

    cert = Path(__file__).resolve().parents[1] / "proofs" / "transcripts" / "alpha_tv.json"
    code = (
        f"import sys; from specproof.cli import main; code = main(['check', {str(cert)!r}, '-q']); "
        "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'sympy', 'torch', 'jinja2', 'tqdm'}))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip().splitlines()[-1] == "0 []"


def test_check_s_default_atol_is_the_library_s():
    from specproof.cli import check
    from specproof.laws.rational import DEFAULT_FLOAT_ATOL

    assert check._DEFAULT_ATOL == DEFAULT_FLOAT_ATOL
