"""benchmarks/mutation.py: the mutant generator, the list of equivalent mutants, and (marked slow)
a bounded mutation run of the exact core and the chain law."""

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("mutation", ROOT / "benchmarks" / "mutation.py")
mutation = importlib.util.module_from_spec(_spec)
sys.modules["mutation"] = mutation  # dataclasses look the module up while the class is built
_spec.loader.exec_module(mutation)

SOURCE = '''"""Docstring: never mutated."""


def f(p, q, xs):
    """Not mutated either."""
    if p < q:
        raise ValueError(f"p is {p + 1}")
    total: int = 0
    for x in xs:
        total += min(x, 0)
    return g(p, q) if not xs and p == 2 else 1.5
'''


def _changes(mutants):
    return {(m.operator, m.before, m.after) for m in mutants}


def test_generator_makes_each_operator_once_per_site_and_skips_strings():
    mutants = mutation.generate("exact", source=SOURCE)
    assert _changes(mutants) == {
        ("drop", "if p < q: raise ValueError(f'p is {p + 1}')", "pass"),
        ("compare", "p < q", "p <= q"),
        ("flip", "p < q", "q < p"),
        ("drop-raise", "raise ValueError(f'p is {p + 1}')", "pass"),
        ("constant", "0", "1"),  # total: int = 0 (the annotation is left alone)
        ("binop", "total += min(x, 0)", "total -= min(x, 0)"),
        ("drop", "total += min(x, 0)", "pass"),
        ("minmax", "min(x, 0)", "max(x, 0)"),
        ("boolop", "not xs and p == 2", "not xs or p == 2"),
        ("not", "not xs", "xs"),
        ("compare", "p == 2", "p != 2"),
        ("constant", "2", "3"),
        ("swap", "g(p, q)", "g(q, p)"),
        ("constant", "1.5", "3.0"),
    }
    # the second 0 (in min(x, 0)) is another mutant with the same change: numbered 1
    assert sorted(m.occurrence for m in mutants if m.operator == "constant" and m.before == "0") == [0, 1]
    for m in mutants:
        assert m.scope == "f"
        mutated = mutation.mutated_source(m)
        assert ast.dump(ast.parse(mutated)) != ast.dump(ast.parse(SOURCE))
        assert '"""Docstring: never mutated."""' in mutated and '"""Not mutated either."""' in mutated
        if not m.operator.startswith("drop"):
            assert 'f"p is {p + 1}"' in mutated


@pytest.mark.slow  # compiles every mutant; CI's slow run
def test_generated_mutants_apply_to_the_real_modules():
    for module in ("checker", "exact", "chain", "block"):
        mutants = mutation.generate(module)
        assert len({m.key for m in mutants}) == len(mutants), module  # keys are unique
        for m in mutants[:: max(1, len(mutants) // 25)]:
            compile(mutation.mutated_source(m), m.where, "exec")


@pytest.mark.slow  # generates every mutant; CI's slow run
@pytest.mark.parametrize("module", ["checker", "exact", "chain", "block"])
def test_every_listed_equivalent_mutant_is_still_generated(module):
    listed = {k for k in mutation.equivalent_keys() if k.startswith(module + " ::")}
    assert listed <= {m.key for m in mutation.generate(module)}


@pytest.mark.slow
def test_bounded_mutation_run_of_exact_and_chain():
    # A fixed sample of 20 non-equivalent mutants per module (about 3 minutes on 2 cores).
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "mutation.py"),
            "exact",
            "chain",
            "--sample",
            "20",
            "--seed",
            "0",
            "--jobs",
            "2",
            "--min-score",
            "95",
            "--quiet",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
