"""``specproof trace python MODULE:FUNCTION``: your own sampler from the command line."""

from __future__ import annotations

import json
import textwrap

import pytest

pytest.importorskip("torch")

from specproof.cli import main  # noqa: E402

SAMPLERS = textwrap.dedent("""
    import numpy as np
    import torch

    def verify(p, q):
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0), 1))

    def verify_le(p, q):
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) <= p[x] / q[x]:
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0), 1))

    def drafted_only(p, q):  # subtracts q only at the drafted token (rotalabs-accel 1.1.1's fault)
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            return x
        r = p.clone()
        r[x] = torch.clamp(p[x] - q[x], min=0)
        return int(torch.multinomial(r, 1))

    def chain(p_rows, q_rows):
        out = []
        for i in range(len(q_rows)):
            p, q = p_rows[i], q_rows[i]
            x = int(torch.multinomial(q, 1))
            if torch.rand(()) < p[x] / q[x]:
                out.append(x)
                continue
            out.append(int(torch.multinomial(torch.clamp(p - q, min=0), 1)))
            return tuple(out)
        return (*out, int(torch.multinomial(p_rows[-1], 1)))

    def plain_min_p(row):  # the engine's plain sampler: min-p 1/2, then a draw
        return int(torch.multinomial(row * (row >= 0.5 * row.max()), 1))

    def spec_min_p(p_rows, q_rows, drop=False):  # one draft; min-p dropped on the verified token if drop
        w = p_rows[0] if drop else p_rows[0] * (p_rows[0] >= 0.5 * p_rows[0].max())
        p, q = w / w.sum(), q_rows[0]
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            return (x, plain_min_p(p_rows[1]))
        return (int(torch.multinomial(torch.clamp(p - q, min=0), 1)),)

    def spec_min_p_dropped(p_rows, q_rows):
        return spec_min_p(p_rows, q_rows, drop=True)

    def nan_last_id(p, q):  # on a NaN row every ratio test fails and the guard emits id 8191 (vLLM #53029's class)
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            return x
        r = torch.clamp(p - q, min=0)
        if not bool(r.sum() > 0):
            return 8191
        return int(torch.multinomial(r, 1))

    def hangs(p, q):  # a sampler that never returns
        while True:
            pass

    def interrupted(p, q):  # as if Ctrl-C were pressed during the trace
        raise KeyboardInterrupt

    def resample_p(p, q):  # draws from p after a rejection: a fault, small on rows where p/q is mostly >= 1
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            return x
        return int(torch.multinomial(p, 1))

    def numpy_verify(p, q, rng):
        x = int(rng.choice(len(q), p=q / q.sum()))
        if rng.random() < p[x] / q[x]:
            return x
        w = np.maximum(p - q, 0)
        return int(rng.choice(len(p), p=w / w.sum()))
""")


@pytest.fixture()
def files(tmp_path, monkeypatch):
    (tmp_path / "samplers.py").write_text(SAMPLERS)
    (tmp_path / "p.json").write_text("[0.6, 0.3, 0.1]")
    (tmp_path / "q.json").write_text("[0.2, 0.5, 0.3]")
    (tmp_path / "p0.json").write_text("[0.5, 0.5, 0]")
    (tmp_path / "q0.json").write_text("[0.25, 0.25, 0.5]")
    (tmp_path / "P.json").write_text("[[0.5, 0.25, 0.25], [0.5, 0.25, 0.25], [0.5, 0.25, 0.25]]")
    (tmp_path / "Q.json").write_text("[[0.25, 0.25, 0.5], [0.25, 0.25, 0.5]]")
    (tmp_path / "q2.json").write_text("[0.5, 0.5]")
    (tmp_path / "Q4.json").write_text("[[0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]]")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_a_float32_textbook_sampler_is_float_faithful(files, capsys):
    assert main(["trace", "python", "samplers:verify", "--target", "p.json", "--draft", "q.json", "--json"]) == 0
    out = _json(capsys)
    assert out["verdict"] == "float-faithful" and out["tv_from_float_ideal"] == "0/1"
    assert out["arithmetic"].startswith("u < fl32(p/q)") and out["tv"] != "0/1"
    assert main(["trace", "python", "samplers:verify", "--target", "p.json", "--draft", "q.json", "--strict"]) == 1
    text = capsys.readouterr().out
    assert "verdict: FLOAT-FAITHFUL; TV from the target's law 6.70552e-09" in text


def test_a_small_fault_s_caveat_names_the_re_trace_s_widened_rows(files, capsys):
    """A small lossy TV argued by re-tracing on the rows widened to float64: its caveat said "the code computes in
    its rows' format (float64)" of float32 rows; it names the re-trace's widened rows."""
    (files / "pt.json").write_text('["1/1000000000", "999999999/1000000000"]')
    (files / "qt.json").write_text('["1/2", "1/2"]')
    argv = ["trace", "python", "samplers:resample_p", "--target", "pt.json", "--draft", "qt.json"]
    assert main([*argv, "--json"]) == 1
    out = _json(capsys)
    assert (out["verdict"], out["dtype"], out["floor"]["outcome"], out["floor"]["wide"]) == (
        "lossy",
        "float32",
        "fault",
        "float64",
    )
    assert out["caveats"] == [
        "lossy on the assumption that the code computes in its rows' format (float64 in the re-trace, its float32 "
        "rows widened) or wider: no narrower PyTorch tensor was made in its code, but narrower arithmetic outside "
        "PyTorch (NumPy's astype(float32), a compiled kernel) is not watched, and would read lossy here"
    ]
    assert main(argv) == 1
    text = capsys.readouterr().out
    assert "on float32 tensors" in text and "its rows' format (float64)" not in text


def test_le_on_a_drafted_p_zero_token_is_lossy(files, capsys):
    assert main(["trace", "python", "samplers:verify_le", "--target", "p0.json", "--draft", "q0.json", "--json"]) == 1
    out = _json(capsys)
    assert out["verdict"] == "lossy" and out["outside_support"] == "1/33554432" and out["tv"] == "1/33554432"


def test_a_block_from_its_row_shapes_and_a_file_path(files, capsys):
    assert (
        main(
            [
                "trace",
                "python",
                str(files / "samplers.py") + ":chain",
                "--target",
                "P.json",
                "--draft",
                "Q.json",
                "--json",
            ]
        )
        == 0
    )
    out = _json(capsys)
    assert out["verdict"] == "lossless" and out["gamma"] == 2 and out["tv"] == "0/1"


def test_numpy_arrays_with_a_generator(files, capsys):
    assert (
        main(
            [
                "trace",
                "python",
                "samplers:numpy_verify",
                "--target",
                "P.json",
                "--draft",
                "Q.json",
                "--array",
                "numpy",
                "--dtype",
                "float64",
                "--numpy-rng",
                "rng",
                "--gamma",
                "2",
            ]
        )
        == 2
    )  # shapes vs gamma
    capsys.readouterr()
    (files / "p1.json").write_text("[0.5, 0.25, 0.25]")
    (files / "q1.json").write_text("[0.25, 0.25, 0.5]")
    assert (
        main(
            [
                "trace",
                "python",
                "samplers:numpy_verify",
                "--target",
                "p1.json",
                "--draft",
                "q1.json",
                "--array",
                "numpy",
                "--dtype",
                "float64",
                "--numpy-rng",
                "rng",
                "--json",
            ]
        )
        == 0
    )
    assert _json(capsys)["verdict"] == "lossless"


def test_a_binary_rows_files_dtype_is_the_default_and_a_missing_generator_is_named(files, capsys):
    import numpy as np

    np.save(files / "p.npy", np.array([0.6, 0.3, 0.1]))  # float64: traced as float64, not rounded to float32
    np.save(files / "q.npy", np.array([0.2, 0.5, 0.3]))
    assert (
        main(
            [
                "trace",
                "python",
                "samplers:numpy_verify",
                "--target",
                "p.npy",
                "--draft",
                "q.npy",
                "--array",
                "numpy",
                "--numpy-rng",
                "rng",
                "--json",
            ]
        )
        == 0
    )
    out = _json(capsys)
    assert out["dtype"] == "float64" and out["arithmetic"].startswith("u < fl64(p/q)")
    assert (
        main(["trace", "python", "samplers:numpy_verify", "--target", "p.npy", "--draft", "q.npy", "--array", "numpy"])
        == 2
    )
    err = capsys.readouterr().err
    assert "missing 1 required positional argument: 'rng'" in err and "--numpy-rng NAME" in err


@pytest.mark.slow  # the search itself is in the default run: tests/test_testing.py, tests/test_faults_2026.py
def test_search_finds_the_smallest_lossy_input(files, capsys):
    assert main(["trace", "python", "samplers:drafted_only", "--search"]) == 1
    text = capsys.readouterr().out
    assert "smallest lossy input (pair 72 of the search): p = (0, 1/2, 1/2), q = (1/2, 0, 1/2)" in text
    assert "verdict: LOSSY; TV from the target's law 0.25 (1/4)" in text
    assert (
        main(["trace", "python", "samplers:verify", "--search", "--max-vocab", "3", "--max-denominator", "3", "--json"])
        == 0
    )
    assert _json(capsys)["search"] is None


@pytest.mark.parametrize(
    "argv,message",
    [
        (["samplers:nope", "--target", "p.json", "--draft", "q.json"], "has no function 'nope'"),
        (["samplers.verify", "--target", "p.json", "--draft", "q.json"], "is not MODULE:FUNCTION"),
        (["no_such_module:verify", "--target", "p.json", "--draft", "q.json"], "cannot import 'no_such_module'"),
        (["missing.py:verify", "--target", "p.json", "--draft", "q.json"], "cannot load 'missing.py': no such file"),
        (["samplers:verify", "--draft", "q.json"], "give --target P and --draft Q"),
        (["samplers:verify", "--search", "--target", "p.json"], "give no --target"),
        (
            ["samplers:verify", "--target", "p.json", "--draft", "q.json", "--array", "numpy", "--dtype", "bfloat16"],
            "NumPy has no bfloat16",
        ),
        (["samplers:verify", "--target", "p.json", "--draft", "missing.json"], "missing.json"),
        (
            ["samplers:verify", "--target", "p.json", "--draft", "q2.json"],
            "--target has V = 3 entries per row (p.json) but --draft has V = 2 (q2.json)",
        ),
        (
            ["samplers:chain", "--target", "P.json", "--draft", "Q4.json"],
            "--target has V = 3 entries per row (P.json) but --draft has V = 4 (Q4.json)",
        ),
        # one-position rows cannot make a block of 2: refused, never a one-position verdict under a block's name
        (
            ["samplers:verify", "--target", "p.json", "--draft", "q.json", "--gamma", "2"],
            "gamma = 2 asks for a block of 2 drafts, which needs gamma + 1 = 3 target rows",
        ),
    ],
)
def test_usage_errors_exit_2_with_a_message(files, capsys, argv, message):
    assert main(["trace", "python", *argv]) == 2
    assert message in capsys.readouterr().err


def test_search_reports_a_sampler_that_raises_and_an_empty_search(files, capsys):
    (files / "more.py").write_text(
        textwrap.dedent("""
        import torch

        def eager_spare(p, q):  # draws a spare token from (q - p)+ before the test: raises when p == q
            spare = int(torch.multinomial(torch.clamp(q - p, min=0), 1))
            x = int(torch.multinomial(q, 1))
            if torch.rand(()) < p[x] / q[x]:
                return x
            return int(torch.multinomial(torch.clamp(p - q, min=0), 1)) + 0 * spare
    """)
    )
    assert main(["trace", "python", "more:eager_spare", "--search", "--max-vocab", "2"]) == 1
    out = capsys.readouterr().out
    assert "the sampler raised on valid rows (pair 1 of the search): p = (0, 1), q = (0, 1)" in out
    assert "weights sum to 0" in out
    assert main(["trace", "python", "samplers:verify", "--search", "--max-vocab", "2", "--max-denominator", "2"]) == 0
    assert "no lossy input among 9 pairs (V 2..2, denominators 1..2, float32 rows;" in capsys.readouterr().out
    # a huge --max-vocab is refused at once (it listed every row of every V before trying a pair: a hang)
    assert main(["trace", "python", "samplers:verify", "--search", "--max-vocab", "100000"]) == 2
    assert "--max-vocab must be in 2..16" in capsys.readouterr().err


def test_search_lossy_lists_rows_lazily_and_checks_its_limits():
    import torch

    from specproof.errors import SpecProofError
    from specproof.trace.testing import search_lossy

    def accept_all(p, q):
        return int(torch.multinomial(q, 1))

    # the API has no cap: V up to 10^5 is searched from V = 2 up, and the first pair (0, 1) vs (1, 0) is lossy
    found = search_lossy(accept_all, max_vocab=100_000, max_denominator=1)
    assert (found.p, found.q, found.pairs) == ((0, 1), (1, 0), 2) and found.comparison.tv == 1
    for bad in ({"max_vocab": 1}, {"max_denominator": 0}, {"max_pairs": -1}, {"max_vocab": 2.5}):
        with pytest.raises(SpecProofError, match=next(iter(bad))):
            search_lossy(accept_all, **bad)


def test_the_differential_test_from_the_command_line(files, capsys):
    (files / "T.json").write_text("[[0.375, 0.375, 0.125, 0.125], [0.125, 0.375, 0.375, 0.125]]")
    (files / "D.json").write_text("[[0.25, 0.25, 0.25, 0.25]]")
    args = ["--target", "T.json", "--draft", "D.json", "--reference", "samplers:plain_min_p", "--json"]
    assert main(["trace", "python", "samplers:spec_min_p", *args]) == 0
    assert _json(capsys)["verdict"] == "lossless"
    assert main(["trace", "python", "samplers:spec_min_p_dropped", *args]) == 1
    out = _json(capsys)
    assert out["verdict"] == "lossy" and out["tv"] == "1/4" and out["arithmetic"].startswith("differential")


def test_a_degenerate_target_row_is_audited_not_refused(files, capsys):
    (files / "nan.json").write_text("[NaN, NaN, NaN]")
    # what the engine emits on an all-NaN row is the finding: id 8191, outside [0, V), with all the mass
    assert main(["trace", "python", "samplers:nan_last_id", "--target", "nan.json", "--draft", "q.json", "--json"]) == 1
    out = _json(capsys)
    assert out["verdict"] == "lossy" and out["law"] == {"8191": "1/1"} and out["outside_support"] == "1/1"
    assert out["degenerate"] == ["p (nan.json): all 3 entries are NaN"] and out["tv"] == "1/1"
    # the textbook sampler refuses it (torch.multinomial raises on NaN weights): reported, exit 0, no traceback
    assert main(["trace", "python", "samplers:verify", "--target", "nan.json", "--draft", "q.json"]) == 0
    text = capsys.readouterr().out
    assert "REFUSED a degenerate row" in text and "all 3 entries are NaN" in text and "weight 0 is nan" in text


def test_a_degenerate_draft_row_is_reported(files, capsys):
    (files / "qinf.json").write_text("[0.5, Infinity, 0.5]")
    assert main(["trace", "python", "samplers:verify", "--target", "p.json", "--draft", "qinf.json", "--json"]) == 0
    out = _json(capsys)
    assert out["verdict"] == "refused" and out["degenerate"] == ["q (qinf.json): +inf at id 1"]
    assert "torch.multinomial" in out["raised"]


def test_a_hanging_sampler_ends_at_the_timeout_with_one_line(files, capsys):
    assert (
        main(["trace", "python", "samplers:hangs", "--target", "p.json", "--draft", "q.json", "--timeout", "0.5"]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        "specproof trace: error: the trace passed its time budget of 0.5 s after 1 run of the sampler; "
        "raise max_seconds (--timeout), or trace fewer positions or a smaller vocabulary"
    )
    assert (
        main(["trace", "python", "samplers:verify", "--target", "p.json", "--draft", "q.json", "--timeout", "0"]) == 2
    )
    assert "--timeout must be a number of seconds > 0" in capsys.readouterr().err


def test_ctrl_c_exits_130_with_one_line(files, capsys):
    assert main(["trace", "python", "samplers:interrupted", "--target", "p.json", "--draft", "q.json"]) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == "specproof trace: interrupted" and "Traceback" not in err  # after the bar


def test_a_gross_fault_names_no_nearest_member_unless_asked(files, capsys):
    (files / "gross.py").write_text("import torch\n\ndef accept_all(p, q):\n    return int(torch.multinomial(q, 1))\n")
    assert main(["trace", "python", "gross:accept_all", "--target", "p.json", "--draft", "q.json", "--json"]) == 1
    out = _json(capsys)
    assert out["verdict"] == "lossy" and out["tv_from_float_ideal"] == out["tv"]
    assert out["arithmetic"].startswith("not compared: the TV from the target, 0.4")
    assert "(a gross fault)" in out["arithmetic"]
    assert (
        main(["trace", "python", "gross:accept_all", "--target", "p.json", "--draft", "q.json", "--json", "--nearest"])
        == 1
    )
    near = _json(capsys)
    assert near["verdict"] == "lossy" and near["tv"] == out["tv"] and "gross" not in near["arithmetic"]
    assert near["tv_from_float_ideal"] != "0/1"


def test_a_stack_of_target_rows_with_one_draft_row_is_refused_naming_both_shapes(files, capsys):
    # a new user's trap (issue 34): [3, V] target rows with a [V] draft row reached the sampler, which raised
    # inside its own code ("Boolean value of Tensor with more than one value is ambiguous")
    assert main(["trace", "python", "samplers:verify", "--target", "P.json", "--draft", "q.json"]) == 2
    err = capsys.readouterr().err
    assert (
        "the target is a stack of 3 rows, shape [3, 3] (a block: gamma = 2 inferred), but the draft is one row, " in err
    )
    assert "shape [3]; a block needs one draft row per drafted position, shape [gamma, V] = [2, 3]" in err
    assert "sampler raised" not in err
    assert main(["trace", "python", "samplers:chain", "--target", "p.json", "--draft", "Q.json"]) == 2
    assert (
        "the target is one row, shape [3] (one position), but the draft is a stack of 2 rows" in capsys.readouterr().err
    )
