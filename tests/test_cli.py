"""Tests for the specproof command line (main(argv) -> int, and the installed entry points)."""

import importlib.util
import json
import subprocess
import sys

import pytest

from specproof import __version__
from specproof.cli import main


def test_crosscheck_command(capsys):
    assert main(["crosscheck", "--pairs", "50", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "crosscheck: 50 pairs" in out
    assert "within bound" in out


def test_crosscheck_exceeded_bound_exits_1(capsys):
    # a bound of 0 cannot be met: the float path has rounding error on some pair
    assert main(["crosscheck", "--pairs", "50", "--bound", "0"]) == 1
    assert "BOUND EXCEEDED" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [[], ["nope"], ["crosscheck", "--pairs", "x"]])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2


def test_bad_value_exits_2(capsys):
    assert main(["crosscheck", "--pairs", "0"]) == 2
    assert "--pairs must be >= 1, got 0" in capsys.readouterr().err


def test_version(capsys):
    assert main(["--version"]) == 0
    assert __version__ in capsys.readouterr().out


def test_python_dash_m():
    run = subprocess.run(
        [sys.executable, "-m", "specproof", "crosscheck", "--pairs", "20"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "within bound" in run.stdout


# ---------------------------------------------------------------- prove / check / transcript


from specproof.certify.certificate import build_certificate, write  # noqa: E402


def test_prove_all_writes_and_summarizes(tmp_path, capsys, monkeypatch):
    # the CLI wiring on two quick theorems; tests/test_theorems.py runs every theorem once
    from specproof import cli, theorems

    quick = {k: theorems.THEOREMS[k] for k in ("seed_cases", "real_phone_lm")}
    monkeypatch.setattr(theorems, "THEOREMS", quick)
    monkeypatch.setattr(cli.prove, "_EXACT_EDGE_CASES", ("disjoint supports",))  # the quickest traced input
    assert main(["prove", "--out", str(tmp_path), "--jobs", "1"]) == 0  # worker processes: the test below
    out = capsys.readouterr().out
    assert "2 of 2 theorems proved" in out
    if importlib.util.find_spec("transformers") is not None:  # a measured finding about the installed library
        assert "_speculative_sampling, V = 4, gamma = 2" in out and "disjoint supports: lossy, TV 1/16777216" in out
    else:
        assert "skipped, not installed" in out
    for key in quick:
        assert (tmp_path / f"{key}.json").exists() and (tmp_path / f"{key}.md").exists()
        assert str(tmp_path / f"{key}.md") in out
    assert "real pairs: phone trigram vs bigram/unigram" in out


def test_prove_one_pair_from_files(tmp_path, capsys):
    (tmp_path / "p.json").write_text(json.dumps(["1/2", "1/2", 0]))
    (tmp_path / "q.txt").write_text("0.25\n0.25\n0.5\n")
    code = main(
        [
            "prove",
            "--target",
            str(tmp_path / "p.json"),
            "--draft",
            str(tmp_path / "q.txt"),
            "--out",
            str(tmp_path / "o"),
            "--name",
            "mine",
        ]
    )
    assert code == 0
    assert "mine: PROVED (V = 3, alpha = 1/2)" in capsys.readouterr().out
    cert = json.loads((tmp_path / "o" / "mine.json").read_text())
    assert cert["provenance"]["draft"]["format"] == "text"
    assert cert["provenance"]["float_policy"]["q"]["name"] == "dyadic-renormalize"
    md = (tmp_path / "o" / "mine.md").read_text()
    assert "dyadic-renormalize" in md and "**Verdict: PROVED**" in md


def test_prove_usage_errors(tmp_path, capsys):
    assert main(["prove", "--target", "x.json"]) == 2
    assert "--target and --draft go together" in capsys.readouterr().err
    (tmp_path / "p.json").write_text(json.dumps(["1/2", "1/3"]))
    assert (
        main(
            ["prove", "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "p.json"), "--out", str(tmp_path)]
        )
        == 2
    )
    assert "p sums to 5/6, not 1" in capsys.readouterr().err


def test_check_exit_codes(tmp_path, capsys):
    good = write(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="g"), tmp_path / "g.json")
    assert main(["check", str(good)]) == 0
    assert "valid" in capsys.readouterr().out
    cert = json.loads(good.read_text())
    cert["totals"]["alpha"] = "3/5"
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps(cert))
    assert main(["check", str(bad)]) == 1
    assert "REJECTED (total): certificate.totals.alpha: expected 3/4, claimed 3/5" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "t.json").write_text(good.read_text()[:50])
    assert main(["check", str(tmp_path / "t.json")]) == 1
    assert main(["check"]) == 2


def test_transcript_command(tmp_path, capsys):
    good = write(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="g"), tmp_path / "g.json")
    assert main(["transcript", str(good)]) == 0
    assert capsys.readouterr().out.startswith("# Proof transcript: g\n")
    assert main(["transcript", str(good), "--out", str(tmp_path / "g.md")]) == 0
    assert (tmp_path / "g.md").read_text().startswith("# Proof transcript: g\n")
    cert = json.loads(good.read_text())
    cert["rows"][0]["residual"] = "1/8"
    (tmp_path / "b.json").write_text(json.dumps(cert))
    assert main(["transcript", str(tmp_path / "b.json")]) == 1
    assert "**Verdict: REJECTED**" in capsys.readouterr().out
    (tmp_path / "n.json").write_text("{")
    assert main(["transcript", str(tmp_path / "n.json")]) == 2


def test_crosscheck_argument_checks(capsys):
    assert main(["crosscheck", "--seed", "-1"]) == 2
    assert main(["crosscheck", "--bound", "nan"]) == 2
    assert main(["crosscheck", "--bound", "-1"]) == 2
    assert "--bound must be a finite number >= 0" in capsys.readouterr().err


def test_check_symbolic_record(tmp_path, capsys):
    from pathlib import Path

    record = Path(__file__).resolve().parents[1] / "proofs" / "transcripts" / "symbolic_every_v.json"
    # check does not run SymPy (issue 30: the checker's trusted base is the standard library): it refuses
    # a record and names the command that re-checks it
    assert main(["check", str(record), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is False and out["reason"] == "record"
    assert f"specproof prove --record {record}" in out["detail"] and "does not run SymPy" in out["detail"]
    assert main(["check", str(record)]) == 1
    assert "NOT CHECKED (record)" in capsys.readouterr().out
    assert main(["prove", "--record", str(record), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is True and "re-ran the SymPy proof" in out["detail"]
    doc = json.loads(record.read_text())
    doc["steps"][0]["result"] = "1"
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert main(["prove", "--record", str(tmp_path / "s.json")]) == 1
    assert "differs from a fresh run of the SymPy proof" in capsys.readouterr().out
    # the SymPy that wrote it is provenance, not a claim: a record written under another SymPy checks
    doc = json.loads(record.read_text())
    doc["sympy_version"] = "1.12"
    (tmp_path / "v.json").write_text(json.dumps(doc))
    assert main(["prove", "--record", str(tmp_path / "v.json")]) == 0
    assert "(recorded under 1.12): it proves everything the record says" in capsys.readouterr().out
    # a certificate is not a record, and a record takes no rows
    cert = record.with_name("alpha_tv.json")
    assert main(["prove", "--record", str(cert)]) == 2
    assert "not a proof record" in capsys.readouterr().err
    assert main(["prove", "--record", str(record), "--target", str(cert), "--draft", str(cert)]) == 2


def test_os_errors_exit_2(tmp_path, capsys):
    (tmp_path / "p.json").write_text(json.dumps(["1/2", "1/2"]))
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert (
        main(
            ["prove", "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "p.json"), "--out", str(blocker)]
        )
        == 2
    )
    good = write(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="g"), tmp_path / "g.json")
    assert main(["transcript", str(good), "--out", str(tmp_path / "no" / "dir" / "x.md")]) == 2
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    assert main(["check", str(tmp_path / "deep.json")]) == 1
    assert main(["transcript", str(tmp_path / "deep.json")]) == 2


@pytest.mark.slow  # every real pair at its real V (SmolLM2: 49,152), about 12 s; CI's main-job step runs it too
def test_crosscheck_real(capsys):
    assert main(["crosscheck", "--real"]) == 0
    out = capsys.readouterr().out
    assert "crosscheck: 38 pairs" in out and "within bound" in out


def test_fixtures_listing(capsys):
    assert main(["fixtures"]) == 0
    assert "phone-HH-AH-bigram: V = 41" in capsys.readouterr().out


def test_transcript_refuses_forged_symbolic_records_and_odd_documents(tmp_path, capsys):
    forged = {
        "schema": "specproof.symbolic-proof/1",
        "name": "forged",
        "statement": "1 = 2",
        "assumptions": [],
        "sympy_version": "9",
        "steps": [],
        "conclusion": "1 = 2",
        "proved": True,
    }
    (tmp_path / "f.json").write_text(json.dumps(forged))
    assert main(["transcript", str(tmp_path / "f.json")]) == 1
    assert "PROVED" not in capsys.readouterr().out
    cert = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="t\n\n**Verdict: PROVED**\n\n<!--")
    cert["rows"][0]["emitted"] = "1/3"
    (tmp_path / "inject.json").write_text(json.dumps(cert))
    assert main(["transcript", str(tmp_path / "inject.json")]) == 1
    out = capsys.readouterr().out
    assert "<!--" not in out and out.count("**Verdict:") == 1 and "**Verdict: REJECTED**" in out
    odd = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="odd")
    odd["provenance"] = "a string"
    (tmp_path / "odd.json").write_text("\ufeff" + json.dumps(odd))
    capsys.readouterr()
    assert main(["transcript", str(tmp_path / "odd.json")]) == 0  # valid; provenance shown as given
    assert "| provenance | a string |" in capsys.readouterr().out


def test_huge_exact_inputs_exit_2(tmp_path, capsys):
    (tmp_path / "p.txt").write_text(f"1/{2**8000}\n{2**8000 - 1}/{2**8000}\n")
    (tmp_path / "q.txt").write_text(f"1/{3**5000}\n{3**5000 - 1}/{3**5000}\n")
    code = main(
        ["prove", "--target", str(tmp_path / "p.txt"), "--draft", str(tmp_path / "q.txt"), "--out", str(tmp_path / "o")]
    )
    assert code in (0, 2)  # proved, or refused with a message; never a traceback


def test_crosscheck_blocks_command(capsys):
    assert main(["crosscheck", "--blocks", "24", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "crosscheck: 24 drafted blocks" in out and "within bound" in out
    assert main(["crosscheck", "--blocks", "0"]) == 2
    assert main(["crosscheck", "--blocks", "4", "--real"]) == 2


def test_crosscheck_blocks_ignores_pairs_and_check_survives_odd_schemas(tmp_path, capsys):
    assert main(["crosscheck", "--blocks", "8", "--pairs", "0"]) == 0
    odd = tmp_path / "odd.json"
    odd.write_text('{"schema": []}')
    assert main(["check", str(odd)]) == 1
    assert main(["transcript", str(odd)]) == 1  # a rejection transcript: the reason, none of the values
    out = capsys.readouterr()
    assert "REJECTED (schema)" in out.out and "**Verdict: REJECTED**" in out.out and "Traceback" not in out.err


def test_utf16_certificates_check_and_render(tmp_path, capsys):
    cert = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="utf16")
    path = tmp_path / "u.json"
    path.write_bytes(json.dumps(cert).encode("utf-16"))
    assert main(["check", str(path)]) == 0
    assert main(["transcript", str(path)]) == 0
    assert "**Verdict: PROVED**" in capsys.readouterr().out


# ---------------------------------------------------------------- issue 10: everyday files, safety, --json

import os  # noqa: E402
from fractions import Fraction  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from specproof import checker  # noqa: E402
from specproof.certify.certificate import build_bundle, build_compact_certificate  # noqa: E402
from specproof.cli.check import _verify  # noqa: E402
from specproof.cli.prove import COMPACT_ABOVE  # noqa: E402


def _prove(tmp_path, target, draft, *extra):
    return main(["prove", "--target", str(target), "--draft", str(draft), "--out", str(tmp_path / "o"), *extra])


def test_prove_float_json_with_integer_zero_and_bom(tmp_path, capsys):
    (tmp_path / "p.json").write_bytes(b"\xef\xbb\xbf[0.5, 0.5, 0]")  # BOM, then floats with an integer 0
    (tmp_path / "q.json").write_text(b'["1/4", "1/4", "1/2"]'.decode(), encoding="utf-16")
    assert _prove(tmp_path, tmp_path / "p.json", tmp_path / "q.json", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    # alpha = min(1/2, 1/4) + min(1/2, 1/4) + min(0, 1/2) = 1/2, TV = 1/2 (by hand)
    assert out["proved"] is True and out["form"] == "full" and out["pairs"] == 1
    # every exact number has its nearest float beside it (KEY_decimal)
    assert out["instances"] == [
        {
            "name": "pair",
            "alpha": "1/2",
            "tv": "1/2",
            "dist_equals_p": True,
            "alpha_equals_one_minus_tv": True,
            "alpha_decimal": 0.5,
            "tv_decimal": 0.5,
        }
    ]
    assert out["checker"]["valid"] is True and out["checker"]["reason"] is None


def test_prove_csv(tmp_path, capsys):
    (tmp_path / "p.csv").write_text("0.5,0.5,0\n")
    (tmp_path / "q.csv").write_text("0.25\n0.25\n0.5\n")
    assert _prove(tmp_path, tmp_path / "p.csv", tmp_path / "q.csv") == 0
    assert "pair: PROVED (V = 3, alpha = 1/2)" in capsys.readouterr().out
    (tmp_path / "t.csv").write_text("0.5,0.5\n0.5,0.5\n")
    assert _prove(tmp_path, tmp_path / "t.csv", tmp_path / "q.csv") == 2
    assert "CSV table of 2 rows" in capsys.readouterr().err


def test_prove_stack_makes_one_bundle(tmp_path, capsys):
    np.save(tmp_path / "p.npy", np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]))
    np.save(tmp_path / "q.npy", np.array([0.25, 0.25, 0.5]))  # one draft row for every target row
    assert _prove(tmp_path, tmp_path / "p.npy", tmp_path / "q.npy", "--json", "--name", "stack") == 0
    out = json.loads(capsys.readouterr().out)
    # alphas by hand: 1/4 + 1/4 + 0, 0 + 1/4 + 1/2, 1/4 + 0 + 0
    assert [i["alpha"] for i in out["instances"]] == ["1/2", "3/4", "1/4"]
    assert [i["name"] for i in out["instances"]] == ["stack-0", "stack-1", "stack-2"]
    doc = json.loads((tmp_path / "o" / "stack.json").read_text())
    assert doc["schema"] == checker.BUNDLE_SCHEMA and doc["count"] == 3
    assert doc["certificates"][2]["provenance"]["target"]["row"] == 2
    assert main(["check", str(tmp_path / "o" / "stack.json")]) == 0
    np.save(tmp_path / "q2.npy", np.array([[0.25, 0.25, 0.5]] * 2))
    assert _prove(tmp_path, tmp_path / "p.npy", tmp_path / "q2.npy") == 2
    assert "--target holds 3 rows and --draft 2" in capsys.readouterr().err


def test_prove_tensor_files(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    safetensors_torch.save_file({"probs": torch.tensor([0.5, 0.5, 0.0])}, str(tmp_path / "p.safetensors"))
    torch.save(torch.tensor([0.25, 0.25, 0.5]), tmp_path / "q.pt")
    assert _prove(tmp_path, tmp_path / "p.safetensors", tmp_path / "q.pt") == 0
    assert "alpha = 1/2" in capsys.readouterr().out


def test_messages_name_cli_options(tmp_path, capsys):
    (tmp_path / "p.json").write_text("[0.5, 0.6]")
    (tmp_path / "q.json").write_text("[0.5, 0.5]")
    assert _prove(tmp_path, tmp_path / "p.json", tmp_path / "q.json") == 2
    err = capsys.readouterr().err
    assert "more than --atol 0.001" in err and "a larger --atol accepts it" in err and "atol=" not in err
    assert _prove(tmp_path, tmp_path / "p.json", tmp_path / "q.json", "--atol", "0.2") == 0


@pytest.mark.parametrize("name", ["../x", "../escaped", "a/b", "a\\b", "..", ""])
def test_name_with_a_path_is_refused(tmp_path, capsys, name):
    (tmp_path / "p.json").write_text('["1/2", "1/2"]')
    assert _prove(tmp_path, tmp_path / "p.json", tmp_path / "p.json", "--name", name) == 2
    assert "--name must be a plain file name" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]  # nothing written anywhere


@pytest.mark.parametrize("atol", ["0", "1", "-0.1", "2", "nan", "inf"])
def test_atol_outside_0_1_is_refused_for_every_input(tmp_path, capsys, atol):
    (tmp_path / "p.json").write_text('["1/2", "1/2"]')  # exact: the tolerance would not even be used
    assert _prove(tmp_path, tmp_path / "p.json", tmp_path / "p.json", "--atol", atol) == 2
    assert "--atol must lie in (0, 1)" in capsys.readouterr().err
    assert main(["prove", "--atol", atol, "--out", str(tmp_path / "o")]) == 2


def test_fixtures_piped_into_head_prints_no_error():
    # `specproof fixtures | head -n 1`: head exits after one line and closes the pipe
    script = "import sys; from specproof.cli import main; sys.exit(main(['fixtures']))"
    run = subprocess.run(
        f'"{sys.executable}" -c "{script}" | head -n 1', shell=True, capture_output=True, text=True, check=False
    )
    assert run.stdout.startswith("phone-HH-AH-bigram: V = 41") and run.stdout.count("\n") == 1
    assert run.stderr == ""


def test_broken_pipe_exit_status():
    read, write_ = os.pipe()
    os.close(read)  # nobody reads: the first flush fails with EPIPE
    run = subprocess.run(
        [sys.executable, "-m", "specproof", "fixtures"], stdout=write_, stderr=subprocess.PIPE, text=True, check=False
    )
    os.close(write_)
    assert run.returncode == 141 and run.stderr == ""


def test_fixtures_regenerate_never_writes_into_the_package(tmp_path, capsys, monkeypatch):
    import specproof
    from specproof.models import fixtures

    package = Path(specproof.__file__).resolve().parent
    written = []
    monkeypatch.setattr(fixtures, "regenerate", lambda out: written.append(out) or [out / "x.json"])
    for target in (package, package / "models" / "fixtures", package / "models" / "fixtures" / "sub"):
        assert main(["fixtures", "--regenerate", "--dir", str(target)]) == 2
        assert "inside the installed specproof package" in capsys.readouterr().err
    assert written == []
    monkeypatch.chdir(tmp_path)
    assert main(["fixtures", "--regenerate"]) == 0
    assert written == [Path("specproof-fixtures")]
    assert main(["fixtures", "--regenerate", "--dir", "mine"]) == 0
    assert written[-1] == Path("mine")


def _floats_pair(v, seed):
    rng = np.random.default_rng(seed)
    rows = rng.random((2, v)) ** 4
    return rows[0] / rows[0].sum(), rows[1] / rows[1].sum()


def test_certificate_form_auto_full_compact(tmp_path, capsys):
    for v in (COMPACT_ABOVE, COMPACT_ABOVE + 1):
        p, q = _floats_pair(v, v)
        np.save(tmp_path / f"p{v}.npy", p)
        np.save(tmp_path / f"q{v}.npy", q)
    small, large = COMPACT_ABOVE, COMPACT_ABOVE + 1
    schemas = {}
    for v, form in ((small, "auto"), (large, "auto"), (large, "full"), (small, "compact")):
        name = f"c{v}{form}"
        assert (
            _prove(
                tmp_path,
                tmp_path / f"p{v}.npy",
                tmp_path / f"q{v}.npy",
                "--certificate",
                form,
                "--name",
                name,
                "--json",
            )
            == 0
        )
        out = json.loads(capsys.readouterr().out)
        schemas[v, form] = (out["form"], json.loads((tmp_path / "o" / f"{name}.json").read_text())["schema"])
        assert out["proved"]
    assert schemas == {
        (small, "auto"): ("full", checker.CERTIFICATE_SCHEMA),
        (large, "auto"): ("compact", checker.COMPACT_SCHEMA),
        (large, "full"): ("full", checker.CERTIFICATE_SCHEMA),
        (small, "compact"): ("compact", checker.COMPACT_SCHEMA),
    }
    # the same alpha either way
    full = json.loads((tmp_path / "o" / f"c{large}full.json").read_text())["totals"]
    compact = json.loads((tmp_path / "o" / f"c{large}auto.json").read_text())["totals"]
    assert full == compact


def test_certificate_compact_needs_floats(tmp_path, capsys):
    (tmp_path / "p.json").write_text('["1/3", "2/3"]')
    (tmp_path / "q.json").write_text("[0.5, 0.5]")
    assert _prove(tmp_path, tmp_path / "p.json", tmp_path / "q.json", "--certificate", "compact") == 2
    assert "use --certificate full" in capsys.readouterr().err
    (tmp_path / "onehot.json").write_text("[0, 1]")  # exact, but 0.0 and 1.0 are float64s
    assert _prove(tmp_path, tmp_path / "onehot.json", tmp_path / "q.json", "--certificate", "compact", "--json") == 0
    assert json.loads(capsys.readouterr().out)["instances"][0]["alpha"] == "1/2"


def _bundle_text(certs, **changes):
    doc = build_bundle(certs, name="b", statement="s")
    doc.update(changes)
    return json.dumps(doc)


def test_verify_is_the_checker_on_the_whole_document():
    good = [build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name=f"g{i}") for i in range(3)]
    compact = build_compact_certificate([0.5, 0.5], [0.25, 0.75], name="c", atol=1e-3)
    tampered = json.loads(json.dumps(good))
    tampered[2]["totals"]["alpha"] = "3/5"
    false_claim = json.loads(json.dumps(good))
    false_claim[1]["claims"]["dist_equals_p"] = False
    nested = [good[0], build_bundle(good[:2], name="inner", statement="s")]
    texts = [
        _bundle_text(good + [compact]),
        _bundle_text(tampered),
        _bundle_text(false_claim),
        _bundle_text(nested),
        _bundle_text(good, count=2),
        _bundle_text(good).replace('"alpha": "3/4"', '"alpha": 0.75', 1),
        _bundle_text(good).replace('"name": "g1"', '"name": "g1", "name": "x"', 1),
        _bundle_text(good).replace('"count": 3', '"count": 3, "count": 3', 1),
        _bundle_text(good)[:-3],
        (Path(__file__).parent / "data" / "trust" / "mixed_bundle_outcome_plus_position.json").read_text(),
    ]

    class Bar:  # counts the steps _verify reports
        disable, n = True, 0

        def update(self, k):
            self.n += k

    bar = Bar()

    def split_check(text):  # as `specproof check` does: parse once, then check with a progress bar
        try:
            doc = checker.parse(text.encode())
        except checker.Rejection as rejection:
            return checker.Verdict(False, rejection.reason, rejection.detail)
        return _verify(doc, bar)

    for text in texts:
        whole, split = checker.check(text), split_check(text)
        assert split == whole, text[:80]  # one fault in each: the same reason and the same words
    assert checker.check(texts[2]).detail == "certificates[1].claims.dist_equals_p: expected True, claimed False"
    # one step per member passed before the first fault (4 valid; 2 before member 2; 1; 1; 0 before the
    # float in member 0); none for a wrong count or a mixed bundle (rejected whole, as check_file does),
    # nor for the three the parser refuses (two repeated keys, truncated)
    assert bar.n == 4 + 2 + 1 + 1
    mixed = texts[-1]
    assert not checker.check(mixed) and checker.check(mixed).reason is checker.Reason.SCHEMA


def test_json_output_of_check_and_crosscheck(tmp_path, capsys):
    good = write(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="g"), tmp_path / "g.json")
    assert main(["check", str(good), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "command": "check",
        "file": str(good),
        "valid": True,
        "reason": None,
        "detail": "re-verified 1 certificate(s)",
        "checker_version": checker.VERSION,
    }
    cert = json.loads(good.read_text())
    cert["totals"]["alpha"] = "3/5"
    (tmp_path / "b.json").write_text(json.dumps(cert))
    assert main(["check", str(tmp_path / "b.json"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is False and out["reason"] == "total"
    assert main(["check", str(tmp_path / "missing.json"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["reason"] == "unreadable"
    assert main(["crosscheck", "--pairs", "20", "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["command"] == "crosscheck" and out["mode"] == "pairs" and out["passed"] is True
    assert out["pairs"] == 20 and out["bound"] == 1e-12
    error = Fraction(out["dist"]["error"])  # an exact "n/d" string
    assert 0 <= error <= Fraction(1, 10**12) and out["dist"]["error_float"] == float(error)
    assert main(["crosscheck", "--pairs", "20", "--bound", "0", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["passed"] is False
    assert main(["crosscheck", "--blocks", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "blocks" and out["blocks"] == 8 and set(out) >= {"accepted", "joint", "recomputed"}


@pytest.mark.slow  # two whole proves, one in worker processes; CI's slow run
def test_prove_all_in_one_process_and_in_worker_processes_writes_the_committed_files(tmp_path, capsys, monkeypatch):
    # the theorems run in worker processes (--jobs 2, the default, with the text table) or in this
    # one (--jobs 1, with --json): both write exactly the committed
    # bytes, keep the summary order, print one progress line per task and a time per theorem
    from pathlib import Path

    from specproof import cli, theorems

    committed = Path(__file__).resolve().parents[1] / "proofs" / "transcripts"
    quick = {k: theorems.THEOREMS[k] for k in ("seed_cases", "small_grid", "block_verification")}
    monkeypatch.setattr(theorems, "THEOREMS", quick)
    monkeypatch.setattr(cli.prove, "_EXACT_EDGE_CASES", ("disjoint supports",))
    for jobs in ("1", "2"):
        argv = ["prove", "--out", str(tmp_path / jobs), "--jobs", jobs] + (["--json"] if jobs == "1" else [])
        assert main(argv) == 0
        captured = capsys.readouterr()
        if jobs == "1":
            out = json.loads(captured.out)
            assert [t["theorem"] for t in out["theorems"]] == list(quick)
            assert all(t["seconds"] >= 0 for t in out["theorems"])
        else:
            table = captured.out.splitlines()
            assert table[0].split() == ["theorem", "instances", "verdict", "seconds", "transcript"]
            assert [row.split("  ")[0] for row in table[2 : 2 + len(quick)]] == [t for t, _ in quick.values()]
        progress = [line for line in captured.err.splitlines() if line.startswith("[")]
        assert len(progress) == len(quick) + 1 and progress[-1].startswith(f"[{len(quick) + 1}/{len(quick) + 1}]")
        for key in quick:
            for suffix in (".json", ".md"):
                assert (tmp_path / jobs / f"{key}{suffix}").read_bytes() == (committed / f"{key}{suffix}").read_bytes()


@pytest.mark.parametrize("argv", [["--jobs", "0"], ["--jobs", "2", "--target", "p.json", "--draft", "q.json"]])
def test_prove_jobs_usage_errors(argv, capsys):
    assert main(["prove", *argv]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_json_output_of_prove_all_and_errors(tmp_path, capsys, monkeypatch):
    from specproof import cli, theorems

    monkeypatch.setattr(theorems, "THEOREMS", {"seed_cases": theorems.THEOREMS["seed_cases"]})
    monkeypatch.setattr(cli.prove, "_EXACT_EDGE_CASES", ("disjoint supports",))
    assert main(["prove", "--out", str(tmp_path), "--json", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)  # exactly one object: json.loads refuses anything after it
    assert out["proved"] is True and [t["theorem"] for t in out["theorems"]] == ["seed_cases"]
    if importlib.util.find_spec("transformers") is not None:
        assert out["findings"]["cases"] == [
            {"input": "disjoint supports", "verdict": "lossy", "tv": "1/16777216", "tv_decimal": 2**-24}
        ]
    assert out["theorems"][0]["certificate"] == str(tmp_path / "seed_cases.json")
    assert main(["prove", "--target", "x.json", "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"command": "prove", "error": "--target and --draft go together"}
    assert main(["check", "--json"]) == 2  # argparse's own usage error
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["command"] == "check" and "the following arguments are required: CERT.json" in out["error"]
    assert "usage: specproof check" in captured.err
    assert main(["prove", "--certificate", "small", "--json"]) == 2
    assert "invalid choice: 'small'" in json.loads(capsys.readouterr().out)["error"]


def test_check_binds_a_certificate_to_its_input_files(tmp_path, capsys):
    (tmp_path / "p.json").write_text("[0.5, 0.25, 0.25]")
    (tmp_path / "q.json").write_text("[0.25, 0.25, 0.5]")
    (tmp_path / "other.json").write_text('["1/2", "1/2", 0]')
    (tmp_path / "pp.json").write_text("[[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]]")
    out = tmp_path / "out"
    assert (
        main(
            [
                "prove",
                "--target",
                str(tmp_path / "p.json"),
                "--draft",
                str(tmp_path / "q.json"),
                "--name",
                "pq",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    cert = json.loads((out / "pq.json").read_text())
    assert len(cert["provenance"]["target"]["sha256"]) == 64  # the input files' hashes are recorded
    capsys.readouterr()
    args = ["check", str(out / "pq.json"), "--target", str(tmp_path / "p.json")]
    assert main(args + ["--draft", str(tmp_path / "q.json")]) == 0
    assert "p and q are exactly --target's and --draft's values made exact" in capsys.readouterr().out
    assert main(args + ["--draft", str(tmp_path / "other.json")]) == 1
    assert "REJECTED (input): certificate 0: q(0) is 1/4, but --draft gives 1/2" in capsys.readouterr().out
    # swapped files: p is not the target file's
    assert (
        main(["check", str(out / "pq.json"), "--target", str(tmp_path / "q.json"), "--draft", str(tmp_path / "p.json")])
        == 1
    )
    assert "certificate 0: p(0) is 1/2, but --target gives 1/4" in capsys.readouterr().out
    # a [N, V] file binds a bundle row by row; one certificate against two rows does not bind
    assert (
        main(
            [
                "prove",
                "--target",
                str(tmp_path / "pp.json"),
                "--draft",
                str(tmp_path / "q.json"),
                "--name",
                "b",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert (
        main(["check", str(out / "b.json"), "--target", str(tmp_path / "pp.json"), "--draft", str(tmp_path / "q.json")])
        == 0
    )
    assert (
        main(
            [
                "check",
                str(out / "pq.json"),
                "--target",
                str(tmp_path / "pp.json"),
                "--draft",
                str(tmp_path / "q.json"),
                "--json",
            ]
        )
        == 1
    )
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["bound_to_inputs"] is False and "holds 1 pair(s)" in report["detail"]


def test_error_messages_escape_terminal_controls(capsys):
    assert main(["audit", "--target", "/nonexistent\x1b[2K\rLOSSLESS.json", "--draft", "q.json"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err and "\\x1b" in err


def test_prove_one_draft_row_with_n_target_rows_says_it_was_used_for_every_row(tmp_path, capsys):
    # a new user's trap (issue 34): one draft row with 3 target rows was paired with each of them silently (the
    # docs promise it: "a one-row file pairs with every row"); the result now says so, in text and in --json
    (tmp_path / "p.json").write_text("[[0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]")
    (tmp_path / "q.json").write_text("[0.4, 0.4, 0.2]")
    assert _prove(tmp_path, tmp_path / "p.json", tmp_path / "q.json") == 0
    out = capsys.readouterr().out
    assert (
        "  the one draft row was used for every one of the 3 target rows (3 pairs); for a different draft row in "
        "each pair, give --draft 3 rows ([3, V])\n" in out
    )
    assert _prove(tmp_path, tmp_path / "q.json", tmp_path / "p.json", "--json") == 0
    assert json.loads(capsys.readouterr().out)["pairing"].startswith(
        "the one target row was used for every one of the 3 draft rows"
    )
    assert _prove(tmp_path, tmp_path / "p.json", tmp_path / "p.json", "--json") == 0  # row i with row i: no line
    assert "pairing" not in json.loads(capsys.readouterr().out)
