"""specproof.corpus.log: the exact law of the accepted count, the log format, and the counter check."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from specproof.corpus.log import (
    InvalidLog,
    accepted_law,
    check_log,
    inject_counting_bug,
    read_log,
    render_check,
    write_log,
)
from specproof.laws.chain import given_block_law

pytest.importorskip("pyarrow")


def test_accepted_law_equals_the_chain_module_on_two_token_rows():
    rng = random.Random(5)
    for _ in range(50):
        k = rng.randint(1, 4)
        p = [rng.choice([0.0, 0.125, 0.25, 0.5, 0.75, 1.0]) for _ in range(k)]
        q = [rng.choice([0.125, 0.25, 0.5, 0.875, 1.0]) for _ in range(k)]
        rows_p = [[Fraction(x), 1 - Fraction(x)] for x in p] + [[1, 0]]
        rows_q = [[Fraction(x), 1 - Fraction(x)] for x in q]
        assert accepted_law(p, q) == given_block_law(rows_p, rows_q, [0] * k).accepted_length_law


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
        rows.append(
            {
                "request": s // 50,
                "step": s % 50,
                "drafted": list(range(k)),
                "p_drafted": p,
                "q_drafted": q,
                "accepted": n,
            }
        )
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

    expect = (
        1
        - NormalDist(200 / sd).cdf(report["total"]["z_critical"])
        + NormalDist(200 / sd).cdf(-report["total"]["z_critical"])
    )
    assert report["power"]["mean_shift"] == 200 and abs(report["power"]["power"] - expect) < 1e-12
    bug = write_log(inject_counting_bug(rows), tmp_path / "bug.parquet")
    flagged = check_log(bug)
    assert not flagged["passed"]
    assert flagged["total"]["observed"] - report["total"]["observed"] == sum(
        1 for n, r in enumerate(rows) if n % 20 == 19 and r["accepted"] < len(r["drafted"])
    )
    # a 3-bit coin compared with <=: accepts with probability (floor(8 t) + 1) / 8
    coarse = write_log(_simulate(4000, random.Random(1), lambda t, u: int(u * 8) / 8 <= t), tmp_path / "coin.parquet")
    assert not check_log(coarse)["passed"]


def test_an_impossible_count_flags_the_log_alone(tmp_path):
    rows = [
        {"request": 0, "step": 0, "drafted": [3, 4], "p_drafted": [0.5, 0.5], "q_drafted": [0.25, 0.25], "accepted": 1}
    ]  # both drafts have p >= q: only 2 can be accepted
    report = check_log(write_log(rows, tmp_path / "x.parquet"))
    assert not report["passed"] and report["impossible_steps"] == 1
    assert report["impossible"][0]["law"] == ["0/1", "0/1", "1/1"]
    line = "  request 0 step 0: observed 1 of gamma 2, exact expectation 2.000000, law ['0', '0', '1']"
    assert line in render_check(report).splitlines()


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


def test_probabilities_below_the_smallest_float_are_checked_not_refused(tmp_path):
    import math

    # P(K = 2) = fl(1e-200)^2 is about 1e-400: a positive exact mass whose float is 0.0
    step = {"request": 0, "step": 0, "drafted": [1, 2], "p_drafted": [1e-200, 1e-200], "q_drafted": [1.0, 1.0]}
    report = check_log(write_log([{**step, "accepted": 0}], tmp_path / "a.parquet"))
    assert report["passed"] and report["impossible_steps"] == 0
    t = Fraction(1e-200)
    lo, hi = (Fraction(x) for x in report["total"]["expected"])
    assert lo <= t + t * t <= hi and hi - lo <= Fraction(1, 1 << 127)
    assert report["likelihood"]["surprisal"] == -math.log(float(1 - t))  # -log(1 - 1e-200) is 0.0 in floats
    # observing that 1e-400 event: a surprisal of about 921, far above its expectation, flags the log
    rows = [{**step, "accepted": 2}] + [
        {"request": 0, "step": i, "drafted": [0], "p_drafted": [0.5], "q_drafted": [0.5], "accepted": 1}
        for i in range(1, 11)
    ]
    flagged = check_log(write_log(rows, tmp_path / "b.parquet"))
    assert not flagged["passed"] and flagged["likelihood"]["flagged"] and flagged["impossible_steps"] == 0
    assert abs(flagged["likelihood"]["surprisal"] - -2 * math.log(1e-200)) < 1e-9
    assert flagged["smallest_possible_probability"] == {"probability": 0.0, "request": 0, "step": 0}


def _row(request=0, step=0, **kw):
    return {
        "request": request,
        "step": step,
        "drafted": [1],
        "p_drafted": [0.5],
        "q_drafted": [0.5],
        "accepted": 1,
        **kw,
    }


def test_a_step_logged_twice_is_refused_naming_the_first_duplicate(tmp_path):
    rows = [_row(0, 0), _row(0, 1), _row(1, 0), _row(0, 2), _row(1, 0), _row(0, 1)]
    with pytest.raises(InvalidLog, match=r"rows 2 and 4 are both request 1, step 0"):
        check_log(write_log(rows, tmp_path / "dup.parquet"))


def test_read_log_refuses_fields_of_the_wrong_kind(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = {
        "request": pa.array([0, 0], pa.int64()),
        "step": pa.array([0, 1], pa.int32()),
        "drafted": pa.array([[1], [1]], pa.list_(pa.int32())),
        "p_drafted": [[0.5], [0.5]],
        "q_drafted": [[0.5], [0.5]],
        "accepted": pa.array([1, 1], pa.int32()),
    }
    cases = {
        "accepted": (pa.array([True, True]), r"row 0: accepted is True, not an integer >= 0"),
        "request": (pa.array([0, None], pa.int64()), r"row 1: request is None, not an integer"),
        "step": (pa.array([0, -1], pa.int32()), r"row 1: step is -1, not an integer >= 0"),
        "drafted": (pa.array([[1], [-5]], pa.list_(pa.int32())), r"request 0, step 1\): drafted holds -5"),
        "p_drafted": (pa.array([0.5, 0.5]), r"p_drafted is 0.5, not a list"),
    }
    for column, (values, message) in cases.items():
        path = tmp_path / f"{column}.parquet"
        pq.write_table(pa.table({**base, column: values}), path)
        with pytest.raises(InvalidLog, match=message):
            read_log(path)
    table = pa.table(base)
    for meta, message in ((b"{not json", "is not JSON"), (b"[1, 2]", "is list, not a JSON object")):
        pq.write_table(table.replace_schema_metadata({b"specproof": meta}), tmp_path / "m.parquet")
        with pytest.raises(InvalidLog, match=f"metadata 'specproof' {message}"):
            read_log(tmp_path / "m.parquet")
    rows = [_row(p_drafted=[0.5]), _row(step=1, q_drafted=[0.0])]
    with pytest.raises(InvalidLog, match=r"request 0, step 1: q_drafted\[0\] is 0"):
        check_log(write_log(rows, tmp_path / "q0.parquet"))


def test_level_and_bias_outside_their_range_are_refused(tmp_path):
    from statistics import NormalDist

    from specproof.corpus.log import MIN_LEVEL
    from specproof.errors import InvalidOption

    path = write_log([_row(0, s) for s in range(3)], tmp_path / "x.parquet")
    for level in ("0", "1", "3/2", "1/10^301", "1e-301", Fraction(1, 10**301), "nan", 0.001):
        with pytest.raises(InvalidOption, match="level is"):
            check_log(path, level=level)
    with pytest.raises(InvalidOption, match="bias is -5; give a bias in tokens per step >= 0"):
        check_log(path, bias="-5")
    # the smallest level works: its critical value from the lower tail (1 - 1e-300/4 is 1.0 in floats)
    tiny = check_log(path, level=MIN_LEVEL)
    assert tiny["total"]["z_critical"] == -NormalDist().inv_cdf(1e-300 / 4) and 37 < tiny["total"]["z_critical"] < 38
    assert check_log(path, level="0.001")["total"]["z_critical"] == check_log(path)["total"]["z_critical"]


def test_docs_quote_the_power_the_check_prints():
    from pathlib import Path

    from specproof.corpus.data import path

    bug = check_log(path("transformers-counting-bug.parquet"))
    doc = (Path(__file__).resolve().parents[1] / "docs" / "corpus.md").read_text(encoding="utf-8")
    assert f"its power at 1/20 token per step is {bug['power']['power']:.3f} by the normal approximation" in doc
