"""The proof runs: every theorem proves, committed transcripts regenerate byte-identically,
and every committed certificate passes the checker."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specproof import checker, theorems
from specproof.errors import SpecProofError

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "proofs" / "transcripts"


#: The two theorems over real vocabularies (SmolLM2's V = 49,152 rows; the phone chain's 9 blocks): about 30 s
#: of the default run's budget, so CI's slow run regenerates them (tests/test_theorems.py::*heavy*).
HEAVY = ("real_smollm2", "chain_phone_lm")
QUICK = [k for k in theorems.THEOREMS if k not in HEAVY]


def _prove(out, keys):
    return [theorems.prove(key, out, coq=False) for key in keys]  # the Coq proofs: tests/test_coq.py


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("transcripts")
    return out, _prove(out, QUICK)


@pytest.fixture(scope="module")
def regenerated_heavy(tmp_path_factory):
    out = tmp_path_factory.mktemp("transcripts_heavy")
    return out, _prove(out, HEAVY)


def test_every_theorem_is_proved(regenerated):
    _, outcomes = regenerated
    assert [o.theorem for o in outcomes] == QUICK and set(QUICK) | set(HEAVY) == set(theorems.THEOREMS)
    assert all(o.proved for o in outcomes), [(o.theorem, o.detail) for o in outcomes]
    counts = {o.theorem: o.instances for o in outcomes}
    assert counts["seed_cases"] == 6 and counts["variants_positions"] == 27 and counts["block_verification"] == 9
    assert counts["real_phone_lm"] == 20
    assert counts["small_grid"] == sum(len(theorems.distributions(v, 4)) ** 2 for v in (1, 2, 3)) == 1 + 49 + 484


@pytest.mark.slow
def test_every_heavy_theorem_is_proved(regenerated_heavy):
    _, outcomes = regenerated_heavy
    assert all(o.proved for o in outcomes), [(o.theorem, o.detail) for o in outcomes]
    assert {o.theorem: o.instances for o in outcomes} == {"real_smollm2": 18, "chain_phone_lm": 9}


def _same_as_committed(out, key):
    # every transcript is committed; every certificate too except real_smollm2.json (19 MB)
    # and chain_phone_lm.json (4 MB)
    suffixes = (".md",) if key in HEAVY else (".json", ".md")
    for suffix in suffixes:
        committed = (COMMITTED / f"{key}{suffix}").read_bytes()
        fresh = (out / f"{key}{suffix}").read_bytes()
        if key == "symbolic_every_v":  # it names the SymPy that checked it: the only part that is the library's
            import sympy

            recorded = json.loads((COMMITTED / f"{key}.json").read_text())["sympy_version"]
            fresh = fresh.replace(
                f'"sympy_version": "{sympy.__version__}"'.encode(), f'"sympy_version": "{recorded}"'.encode()
            )
            fresh = fresh.replace(f"SymPy {sympy.__version__}".encode(), f"SymPy {recorded}".encode())
        assert fresh == committed, f"{key}{suffix} differs: rerun python proofs/{key}.py"


@pytest.mark.parametrize("key", QUICK)
def test_committed_transcripts_regenerate_byte_identically(regenerated, key):
    _same_as_committed(regenerated[0], key)


@pytest.mark.slow
@pytest.mark.parametrize("key", HEAVY)
def test_committed_heavy_transcripts_regenerate_byte_identically(regenerated_heavy, key):
    _same_as_committed(regenerated_heavy[0], key)


COMMITTED_CERTIFICATES = [
    "alpha_tv.json",
    "block_verification.json",
    "real_phone_lm.json",
    "seed_cases.json",
    "small_grid.json",
    "variants_positions.json",
]


def test_the_committed_certificates_are_these():
    # a record, two large bundles, and the relaxed-acceptance sweep (a table of laws, not a certificate)
    records = ("symbolic_every_v", "real_smollm2", "chain_phone_lm", "relaxed_acceptance")
    tracked = sorted(p.name for p in COMMITTED.glob("*.json") if p.stem not in records)
    assert tracked == COMMITTED_CERTIFICATES


@pytest.mark.parametrize("path", COMMITTED_CERTIFICATES)
def test_committed_certificates_pass_the_checker(path):
    verdict = checker.check_file(COMMITTED / path)
    assert verdict.valid, verdict


def test_proof_script_runs_and_exits_0(tmp_path):
    # a copy of a script in a scratch folder writes its transcripts beside it
    script = tmp_path / "seed_cases.py"
    script.write_text((ROOT / "proofs" / "seed_cases.py").read_text())
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "PROVED" in run.stdout
    assert (tmp_path / "transcripts" / "seed_cases.md").read_bytes() == (COMMITTED / "seed_cases.md").read_bytes()


def test_unknown_theorem():
    with pytest.raises(SpecProofError, match="unknown theorem 'nope'"):
        theorems.prove("nope", ".")


def test_distributions():
    assert theorems.distributions(2, 2) == sorted({(0, 1), (1, 0), (theorems.Fraction(1, 2),) * 2})
    assert all(sum(d) == 1 for d in theorems.distributions(3, 6))


def _square(x):
    return x * x


def _fail(x):
    raise SpecProofError(f"task {x} failed")


def test_run_parallel_yields_every_result_once_and_raises_a_task_error():
    tasks = {f"t{i}": (_square, (i,)) for i in range(5)}
    assert list(theorems.run_parallel(tasks, 1)) == [(f"t{i}", i * i) for i in range(5)]  # in order, here
    assert sorted(theorems.run_parallel(tasks, 2)) == [(f"t{i}", i * i) for i in range(5)]
    with pytest.raises(SpecProofError, match="task 3 failed"):
        list(theorems.run_parallel({**tasks, "bad": (_fail, (3,))}, 2))


def test_prove_records_its_time(tmp_path):
    outcome = theorems.prove("seed_cases", tmp_path)
    assert outcome.proved and outcome.seconds > 0
