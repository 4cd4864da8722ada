"""specproof.corpus.log: the exact law of the accepted count, the log format, and the counter check."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from specproof.laws.chain import given_block_law
from specproof.corpus.log import InvalidLog, accepted_law, check_log, inject_counting_bug, read_log, write_log

pytest.importorskip("pyarrow")


def test_accepted_law_equals_the_chain_module_on_two_token_rows():
    rng = random.Random(5)
    for _ in range(50):
        k = rng.randint(1, 4)
        p = [rng.choice([0.0, 0.125, 0.25, 0.5, 0.75, 1.0]) for _ in range(k)]
        q = [rng.choice([0.125, 0.25, 0.5, 0.875, 1.0]) for _ in range(k)]
        rows_p = [[Fraction(x), 1 - Fraction(x)] for x in p] + [[1, 0]]
        rows_q = [[Fraction(x), 1 - Fraction(x)] for x in q]
        assert accepted_law(p, q) == given_block_law(rows_p, rows_q, [0] * k).accepted_length


def test_accepted_law_refuses_bad_values():
    with pytest.raises(InvalidLog, match=r"q_drafted\[0\] is 0"):
        accepted_law([0.5], [0.0])
    with pytest.raises(InvalidLog, match=r"p_drafted\[1\] is 1.5"):
        accepted_law([0.5, 1.5], [0.5, 0.5])
    with pytest.raises(InvalidLog, match="same k"):
        accepted_law([0.5], [0.5, 0.5])


def _simulate(steps, rng, coin=lambda t, u: u < t):
    """A log of an ideal verifier (or another coin rule) on random drafts' probabilities."""
    rows = []
    for s in range(steps):
        k = rng.randint(1, 4)
        p = [rng.random() for _ in range(k)]
        q = [rng.random() * 0.9 + 0.1 for _ in range(k)]
        n = 0
        while n < k and coin(min(1.0, p[n] / q[n]), rng.random()):
            n += 1
        rows.append({"request": s // 50, "step": s % 50, "drafted": list(range(k)), "p_drafted": p, "q_drafted": q,
                     "accepted": n})
    return rows


def test_check_passes_the_ideal_verifier_and_flags_a_counting_bug_and_a_coarse_le_coin(tmp_path):
    rng = random.Random(0)
    rows = _simulate(4000, rng)
    good = write_log(rows, tmp_path / "good.parquet", {"source": "simulated"})
    report = check_log(good)
    assert report["passed"] and report["impossible_steps"] == 0
    assert report["steps"] == 4000 and report["log_meta"]["source"] == "simulated"
    assert abs(report["total"]["z"]) < report["total"]["z_critical"]
    # power at 1/20 token per step over 4000 steps: P(|N(200, v)| > z_crit sqrt(v)), v the exact variance
    sd = report["total"]["variance_float"] ** 0.5
    from statistics import NormalDist

    expect = 1 - NormalDist(200 / sd).cdf(report["total"]["z_critical"]) + NormalDist(200 / sd).cdf(-report["total"]["z_critical"])
    assert report["power"]["mean_shift"] == 200 and abs(report["power"]["power"] - expect) < 1e-12
    bug = write_log(inject_counting_bug(rows), tmp_path / "bug.parquet")
    flagged = check_log(bug)
    assert not flagged["passed"]
    assert flagged["total"]["observed"] - report["total"]["observed"] == sum(
        1 for n, r in enumerate(rows) if n % 20 == 19 and r["accepted"] < len(r["drafted"]))
    # a 3-bit coin compared with <=: accepts with probability (floor(8 t) + 1) / 8
    coarse = write_log(_simulate(4000, random.Random(1), lambda t, u: int(u * 8) / 8 <= t), tmp_path / "coin.parquet")
    assert not check_log(coarse)["passed"]


def test_an_impossible_count_flags_the_log_alone(tmp_path):
    rows = [{"request": 0, "step": 0, "drafted": [3, 4], "p_drafted": [0.5, 0.5], "q_drafted": [0.25, 0.25],
             "accepted": 1}]  # both drafts have p >= q: only 2 can be accepted
    report = check_log(write_log(rows, tmp_path / "x.parquet"))
    assert not report["passed"] and report["impossible_steps"] == 1
    assert report["impossible"][0]["law"] == ["0/1", "0/1", "1/1"]


def test_read_log_names_what_is_wrong(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"request": [0], "step": [0]}), tmp_path / "a.parquet")
    with pytest.raises(InvalidLog, match="missing column"):
        read_log(tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"not parquet")
    with pytest.raises(InvalidLog, match="not a readable Parquet file"):
        read_log(tmp_path / "b.parquet")
    rows = [{"request": 0, "step": 0, "drafted": [1, 2], "p_drafted": [0.5], "q_drafted": [0.5, 0.5], "accepted": 0}]
    with pytest.raises(InvalidLog, match="same length"):
        read_log(write_log(rows, tmp_path / "c.parquet"))


def test_the_shipped_transformers_logs_genuine_passes_bug_and_le_coin_are_flagged():
    from specproof.corpus.data import path

    genuine = check_log(path("transformers-genuine.parquet"))
    assert genuine["passed"] and genuine["steps"] > 1000
    assert "_speculative_sampling wrapped" in genuine["log_meta"]["engine"]
    bug = check_log(path("transformers-counting-bug.parquet"))
    assert not bug["passed"] and bug["likelihood"]["flagged"]
    assert bug["total"]["expected"] == genuine["total"]["expected"]  # the same steps, counts moved
    coin = check_log(path("transformers-le-coin3.parquet"))
    assert not coin["passed"] and coin["total"]["flagged"] and coin["total"]["observed"] > coin["total"]["expected_hi"]
    assert "2^-3" in coin["log_meta"]["coin"]
