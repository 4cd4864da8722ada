"""--json: a decimal beside every exact number (issue 34), the exact string kept."""

from __future__ import annotations

import json

from specproof.cli import main
from specproof.cli._common import _with_decimals


def test_every_exact_number_gets_its_nearest_float_beside_it():
    doc = {
        "tv": "1/3",
        "law": ["1/4", "3/4"],
        "out_of_range": {"2": "1/8"},
        "name": "1/2 of it",
        "nested": [{"alpha": "-5/2", "count": 3}],
        "ids": [1, 2],
        "huge": "1" + "0" * 400 + "/1",
    }
    assert _with_decimals(doc) == {
        "tv": "1/3",
        "tv_decimal": 1 / 3,
        "law": ["1/4", "3/4"],
        "law_decimal": [0.25, 0.75],
        "out_of_range": {"2": "1/8"},
        "out_of_range_decimal": {"2": 0.125},
        "name": "1/2 of it",
        "nested": [{"alpha": "-5/2", "alpha_decimal": -2.5, "count": 3}],
        "ids": [1, 2],
        "huge": "1" + "0" * 400 + "/1",
        "huge_decimal": None,
    }  # past the float range: None, the exact value stays


def test_audit_json_carries_decimals(tmp_path, capsys):
    (tmp_path / "p.json").write_text('["3/4", "1/4"]')
    (tmp_path / "q.json").write_text('["1/4", "3/4"]')
    assert (
        main(
            [
                "audit",
                "--target",
                str(tmp_path / "p.json"),
                "--draft",
                str(tmp_path / "q.json"),
                "--policy",
                "accept-all",
                "--json",
            ]
        )
        == 1
    )
    doc = json.loads(capsys.readouterr().out)
    # accept-all emits q: TV = 1/2, alpha = 1; the textbook alpha sum min(p, q) = 1/2
    assert (doc["tv"], doc["tv_decimal"], doc["alpha_decimal"], doc["textbook_alpha_decimal"]) == ("1/2", 0.5, 1.0, 0.5)
    assert doc["law_decimal"] == [0.25, 0.75] and doc["reference_decimal"] == [0.75, 0.25]
