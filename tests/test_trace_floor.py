"""The float floor for any code (specproof.trace.floor): re-traced on the same rows' laws in float64, a float
artefact's TV falls with the unit roundoff, a logic fault's does not (issue 33, item 3)."""

import random
from fractions import Fraction as F

import pytest

torch = pytest.importorskip("torch")

from specproof.testing import assert_lossless, compare  # noqa: E402
from specproof.trace import floor  # noqa: E402

P = torch.tensor([0.6, 0.3, 0.1])  # float32 rows: neither sums to 1 exactly
Q = torch.tensor([0.2, 0.5, 0.3])


def min_p(row, threshold=0.2):
    """The engine's sampling parameter: keep the tokens within ``threshold`` of the largest, renormalize."""
    kept = row * (row >= threshold * row.max())
    return kept / kept.sum()


def plain(row):
    """The engine's plain (non-speculative) sampler: min-p, then sample."""
    return int(torch.multinomial(min_p(row), 1))


def spec_step(p, q, drop_min_p=False):
    """A correct speculative step with min-p inside it (``drop_min_p``: vLLM PR #42802's fault)."""
    p = p if drop_min_p else min_p(p)
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(p - q, min=0), 1))


def posterior(target, draft, k=2, renormalize=True):
    """A stand-in for EAGLE-style posterior evaluation (sampling): the candidates are the draft's top k, taken
    in order; each is accepted with the target's current probability of it (a Python-float coin against a
    float32 entry), else its probability is zeroed and the row renormalized; after the last, sample the row."""
    row = target.clone()
    for c in torch.topk(draft, k).indices.tolist():
        if random.random() <= row[c]:
            return c
        row[c] = 0
        if renormalize:
            row = row / row.sum()
    return int(torch.multinomial(row, 1))


def test_a_correct_step_with_min_p_inside_is_float_faithful_against_its_plain_sampler():
    c = compare(spec_step, P, Q, reference=plain)
    assert c.verdict == "float-faithful"
    assert c.tv == F(1, 201326595)  # 1 / (3 (2^26 + 1)): the float32 row fl32(2/3), fl32(1/3) does not sum to 1
    assert c.floor.argument == "widening" and c.floor.outcome == "float artefact"
    assert (c.floor.narrow, c.floor.wide) == ("float32", "float64")
    assert c.floor.tv_wide == F(4503599426043905, 121694457621910022543683507716096)  # 3.7e-17
    assert c.floor.tv_wide <= c.floor.threshold == c.tv / 2**15
    assert "re-tracing in float64" in c.report() and "float artefact" in c.report()
    assert "re-traced" in c.arithmetic


def test_the_same_step_dropping_min_p_is_lossy_with_its_exact_tv():
    c = compare(lambda p, q: spec_step(p, q, drop_min_p=True), P, Q, reference=plain)
    assert c.verdict == "lossy"
    assert c.tv == F(5629499422365, 56294996180992)  # 0.1: the step emits id 2, which min-p removed
    assert c.floor is None  # gross (and outside the plain sampler's support): no floor argued


def test_eagle_style_posterior_renormalizing_is_float_faithful():
    c = compare(posterior, P, Q)
    assert c.verdict == "float-faithful"
    assert c.tv == F(31525198733770757, 1208925864650625448411136)  # 2.6e-8, as given (float32 rows, Python coin)
    assert c.floor.outcome == "float artefact"
    assert c.floor.tv_wide == F(
        477174730694390854025165168117045, 2923003274661806079796284909252611126678880518144
    )  # 1.6e-16
    assert_lossless(posterior, P, Q)  # float_floor="allow" passes it
    with pytest.raises(AssertionError, match="float_floor='fail'"):
        assert_lossless(posterior, P, Q, float_floor="fail")


def test_eagle_style_posterior_without_renormalizing_is_lossy():
    c = compare(lambda p, q: posterior(p, q, renormalize=False), P, Q)
    assert c.verdict == "lossy"
    assert c.tv == F(9735555932754380109109270675463, 324518565747684922929447767638016)  # 0.03
    assert c.floor is None  # gross


def test_a_small_logic_fault_does_not_fall_and_stays_lossy():
    def shaved(p, q):  # accepts 2^-20 too rarely: a fault far below the gross threshold
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x] * (1 - 2**-20):
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0), 1))

    c = compare(shaved, P, Q)
    assert c.verdict == "lossy" and c.floor.outcome == "fault"
    assert c.tv == F(180378556100335, 472236672916025245696) and c.tv <= floor.gross_threshold("float32")  # 3.8e-7
    assert c.floor.tv_wide > c.floor.threshold and float(c.floor.tv_wide) == pytest.approx(float(c.tv), rel=0.2)
    assert "did not fall" in c.report()


def test_no_verdict_where_the_argument_cannot_be_made():
    # rows already float64: nothing wider to re-trace in (here the float32 rows made float64: their sums are
    # off from 1 by about 1e-8, and so is the TV; and their laws in float64: TV about 1e-16)
    for p, q in ((P.double(), Q.double()), (floor.widen(P), floor.widen(Q))):
        c = compare(posterior, p, q)
        assert c.verdict == "undecided" and c.floor.outcome == "not made" and c.floor.tv_wide is None
        assert 0 < c.tv <= floor.gross_threshold("float64", floor.sum_error(p, q))
        assert "already float64" in c.report()
    assert float(c.tv) < 1e-15
    with pytest.raises(AssertionError, match="UNDECIDED"):
        assert_lossless(posterior, P.double(), Q.double())

    # code that keeps float32 inside whatever its rows' format: the widening does not reach its arithmetic
    def narrow(p, q):
        return posterior(p.float(), q.float())

    c = compare(narrow, P, Q)
    assert c.verdict == "undecided" and "narrower format" in c.floor.reason and "float32 from float" in c.floor.reason
    assert __file__ in c.floor.reason

    # code that refuses float64 rows
    def refuses(p, q):
        if p.dtype != torch.float32:
            raise TypeError("float32 only")
        return posterior(p, q)

    c = compare(refuses, P, Q)
    assert c.verdict == "undecided" and "could not be re-traced" in c.floor.reason and "float32 only" in c.floor.reason


def test_the_floor_runs_only_when_asked_and_restores_the_default_dtype():
    c = compare(posterior, P, Q, widen=False)
    assert c.verdict == "lossy" and c.floor is None
    compare(posterior, P, Q)
    assert torch.get_default_dtype() == torch.float32


def test_widen_gives_each_probability_row_its_law_in_float64_and_logits_their_exact_values():
    w = floor.widen(torch.tensor([[0.2, 0.5, 0.3], [-1.5, 0.25, 3.0]]))
    assert w.dtype == torch.float64
    assert w[1].tolist() == [-1.5, 0.25, 3.0]
    assert abs(float(w[0].sum()) - 1) <= 2**-52
    np = pytest.importorskip("numpy")
    a = floor.widen(np.array([0.2, 0.5, 0.3], dtype=np.float32))
    assert a.dtype == np.float64 and abs(float(a.sum()) - 1) <= 2**-52
    assert floor.widen(lambda prefix: torch.tensor([0.5, 0.5]))(()).dtype == torch.float64
    assert floor.row_format([0.5, 0.5]) == "float64" and floor.row_format(P) == "float32"
    assert floor.gross_threshold("float32") == F(1, 2**12) and floor.gross_threshold("bfloat16") == F(1, 64)


def test_a_match_rule_drawing_the_target_token_by_inverse_cdf_is_float_faithful():
    def match(p, q):  # draft x ~ q, the target's token y by an inverse CDF on a coin; emit y (x accepted iff x == y)
        int(torch.multinomial(q, 1))
        y = torch.searchsorted(torch.cumsum(p, 0), torch.rand(()), right=True)
        return int(y.clamp(max=len(p) - 1))

    c = compare(match, P, Q)
    assert c.verdict == "float-faithful" and c.floor.outcome == "float artefact"
    assert c.tv == F(75497475, 2251799897571328)  # 3.4e-8: the float32 cumsum
    assert c.floor.tv_wide == F(724775733, 9671406556917034202955776)  # 7.5e-17


def block_step(p_rows, q_rows, drop_min_p_at=None):
    """A block of gamma drafts, min-p applied to each target row inside (``drop_min_p_at``: not at that position)."""
    out = []
    for i in range(len(q_rows)):
        t = p_rows[i] if i == drop_min_p_at else min_p(p_rows[i])
        q = q_rows[i]
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < t[x] / q[x]:
            out.append(x)
            continue
        return (*out, int(torch.multinomial(torch.clamp(t - q, min=0), 1)))
    return (*out, int(torch.multinomial(min_p(p_rows[-1]), 1)))


def test_a_block_with_min_p_inside_against_its_plain_sampler():
    rows, drafts = torch.stack([P, P, P]), torch.stack([Q, Q])
    c = compare(block_step, rows, drafts, reference=plain)
    assert c.gamma == 2 and c.verdict == "float-faithful" and c.floor.outcome == "float artefact"
    assert c.tv == F(1, 201326595)
    assert c.floor.tv_wide == F(4503599426043905, 121694457621910022543683507716096)
    bad = compare(lambda a, b: block_step(a, b, drop_min_p_at=1), rows, drafts, reference=plain)
    assert bad.verdict == "lossy" and bad.floor is None
    # 0.053: at position 1 the step emits id 2, which min-p removes (all of the TV is outside the plain law's support)
    assert bad.tv == bad.outside_support == F(40297527495627509835, 755578659777141538816)


def test_numpy_code_on_float32_arrays():
    np = pytest.importorskip("numpy")

    def np_posterior(p, q, rng, k=2):
        row = p.copy()
        for c in np.argsort(-q, kind="stable")[:k]:
            if rng.random() <= row[c]:
                return int(c)
            row[c] = 0
            row = row / row.sum()
        return int(rng.choice(len(row), p=row / row.sum()))

    p, q = np.array([0.6, 0.3, 0.1], dtype=np.float32), np.array([0.2, 0.5, 0.3], dtype=np.float32)
    c = compare(np_posterior, p, q, numpy_rng="rng")
    assert c.verdict == "float-faithful" and c.floor.outcome == "float artefact"
    assert c.tv == F(31525198733770757, 1208925864650625448411136)


def test_the_command_line_says_which_argument_was_used(tmp_path, monkeypatch, capsys):
    import json
    import textwrap

    from specproof.cli import main

    (tmp_path / "eagle_like.py").write_text(
        textwrap.dedent("""
        import random
        import torch

        def posterior(p, q, k=2):
            row = p.clone()
            for c in torch.topk(q, k).indices.tolist():
                if random.random() <= row[c]:
                    return c
                row[c] = 0
                row = row / row.sum()
            return int(torch.multinomial(row, 1))
    """)
    )
    (tmp_path / "p.json").write_text("[0.6, 0.3, 0.1]")
    (tmp_path / "q.json").write_text("[0.2, 0.5, 0.3]")
    monkeypatch.chdir(tmp_path)
    args = ["trace", "python", "eagle_like.py:posterior", "--target", "p.json", "--draft", "q.json"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "float-faithful" and out["floor"]["argument"] == "widening"
    assert out["floor"]["outcome"] == "float artefact" and out["floor"]["wide"] == "float64"
    assert out["floor"]["tv"] == out["tv"] == "31525198733770757/1208925864650625448411136"
    assert main(args) == 0
    assert "float floor by re-tracing in float64" in capsys.readouterr().out
    assert main([*args, "--dtype", "float64"]) == 1  # float64 rows: nothing wider, undecided
    assert "UNDECIDED" in capsys.readouterr().out


def posterior_in_float32(target, draft):
    """The posterior stand-in, making its rows float32 whatever it is given (a ``dtype=torch.float32``)."""
    return posterior(torch.as_tensor(target, dtype=torch.float32), torch.as_tensor(draft, dtype=torch.float32))


def test_float64_rows_made_float32_inside_the_code_name_what_the_verdict_rests_on():
    # correct code outside the textbook family; its TV (about 3e-8) is gross for float64 rows (> 2^-41) but
    # within float32's floor range, the format the code computes in: nothing wider to re-trace in. The verdict
    # is the family's (it was "lossy" with no word on this), and the report says what it rests on
    rows = [0.6, 0.3, 0.1], [0.2, 0.5, 0.3]
    c = compare(posterior_in_float32, *rows)
    assert c.verdict == "lossy" and 0 < c.tv < F(1, 10**7)
    assert c.floor.outcome == "not made" and c.floor.narrow == "float64"
    assert "computes in float32 on float64 rows" in c.floor.reason and "test_trace_floor.py" in c.floor.reason
    assert any("on the textbook float family alone" in caveat for caveat in c.caveats)
    report = c.report()
    assert "float floor not argued" in report and "caveat: lossy on the textbook float family alone" in report


def test_a_small_fault_in_float64_code_on_float64_rows_stays_lossy():
    def shaved(p, q):  # accepts with p/q (1 - 2^-20): a logic fault of TV about 4e-7, all in float64
        p, q = (torch.as_tensor(r, dtype=torch.float64) for r in (p, q))
        x = int(torch.multinomial(q, 1))
        if torch.rand((), dtype=torch.float64) < p[x] / q[x] * (1 - 2.0**-20):
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0), 1))

    c = compare(shaved, [0.6, 0.3, 0.1], [0.2, 0.5, 0.3])
    assert c.verdict == "lossy" and F(1, 10**7) < c.tv < F(1, 10**6)
    assert c.floor is None  # no narrower arithmetic seen: the float64 floor is far below this TV
    assert any("narrower arithmetic outside PyTorch" in caveat and "(float64)" in caveat for caveat in c.caveats)
    assert "caveat: lossy on the assumption" in c.report()


def test_code_in_a_folder_named_specproof_is_still_the_users(tmp_path, monkeypatch):
    # a clone of the repository is a folder named specproof: the code there is the user's, not the library's
    # (a path test by name read its narrower arithmetic as the library's, and the verdict was a false "lossy")
    folder = tmp_path / "specproof"
    folder.mkdir()
    (folder / "my_narrow_sampler.py").write_text(
        "import torch\n"
        "import random\n\n"
        "def narrow(target, draft):\n"
        "    row, draft = target.float().clone(), draft.float()\n"
        "    for c in torch.topk(draft, 2).indices.tolist():\n"
        "        if random.random() <= row[c]:\n"
        "            return c\n"
        "        row[c] = 0\n"
        "        row = row / row.sum()\n"
        "    return int(torch.multinomial(row, 1))\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(folder))
    import my_narrow_sampler

    c = compare(my_narrow_sampler.narrow, P, Q)
    assert c.verdict == "undecided" and "narrower format" in c.floor.reason
    assert str(folder / "my_narrow_sampler.py") in c.floor.reason


def test_target_and_draft_of_different_sizes_are_refused_before_the_sampler_runs():
    from specproof.errors import InvalidDistribution

    ran = []

    def sampler(p, q):
        ran.append(1)
        return spec_step(p, q)

    with pytest.raises(InvalidDistribution, match=r"target's row has V = 2 tokens and the draft's V = 3"):
        compare(sampler, torch.tensor([0.5, 0.5]), Q)
    with pytest.raises(InvalidDistribution, match="V = 2 tokens and the draft's V = 3"):
        assert_lossless(sampler, [0.5, 0.5], [0.2, 0.5, 0.3])
    assert ran == []


def _counted(sampler):
    """``sampler``, counting its calls under PyTorch's default dtype float64 (the widening re-trace's runs)."""
    wide_calls = []

    def counted(p, q):
        if torch.get_default_dtype() == torch.float64:
            wide_calls.append(1)
        return sampler(p, q)

    return counted, wide_calls


def test_code_that_casts_its_rows_to_float32_is_not_re_traced_past_the_cast():
    # issue 33, item 4: the code converts its rows to float32 before its arithmetic, so on float64 rows it computes
    # the same as on float32 ones; its re-trace could not argue the floor and stops at the cast, in its first run
    narrow, wide_calls = _counted(lambda p, q: posterior(p.float(), q.float()))
    c = compare(narrow, P, Q)
    assert c.tv == F(31525198733770757, 1208925864650625448411136)  # as the dtype-following code's below
    assert c.verdict == "undecided"  # not made stronger by the skip: still no verdict
    assert c.floor.outcome == "not made" and c.floor.tv_wide is None and c.floor.runs == 0
    assert wide_calls == [1]  # one run of the re-trace, stopped at p.float()
    assert "float32 from float at" in c.floor.reason and __file__ in c.floor.reason
    assert "the re-trace was stopped at that call" in c.floor.reason and "wider format is no argument" in c.report()
    with pytest.raises(AssertionError, match="UNDECIDED"):
        assert_lossless(narrow, P, Q)

    # the same code computing in its rows' dtype is re-traced whole, and its floor argued
    following, wide_calls = _counted(posterior)
    c = compare(following, P, Q)
    assert c.verdict == "float-faithful" and c.floor.outcome == "float artefact"
    assert c.floor.runs == 229 and len(wide_calls) == 229 + 3  # its runs, and 3 replays of the control check
    assert "stopped" not in c.report()
