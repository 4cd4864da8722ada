"""specproof.corpus: the per-position exact work, the phone source, the in-process pipeline and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from specproof.laws.chain import verification_law
from specproof.corpus.job import GRID_BITS, Node, accepted_bounds, emitted_bounds, node_from_record, node_law, node_record
from specproof.errors import InvalidDistribution

pytest.importorskip("pyarrow")


def test_import_specproof_imports_neither_pyarrow_nor_ray_nor_torch():
    code = ("import sys, specproof, specproof.corpus, specproof.corpus.cli, specproof.cli; "
            "print(sorted(m for m in ('pyarrow', 'ray', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_node_law_is_exact_alpha_and_keeps_the_named_children():
    node = node_law(np.array([0.5, 0.25, 0.25]), np.array([0.25, 0.25, 0.5]), [2, 0], atol=1e-9)
    assert node.alpha == Fraction(3, 4)
    assert node.children == ((0, node.denominator // 4), (2, node.denominator // 4))
    assert node.alpha_float == 0.75
    assert node_from_record(json.loads(json.dumps(node_record(node)))) == node
    with pytest.raises(InvalidDistribution, match=r"child ids \[3\]"):
        node_law(np.array([0.5, 0.5]), np.array([0.5, 0.5]), [3], atol=1e-9)


def _tree(rows):
    """A toy model over V = 2: rows[prefix] = (p, q); prefixes not in rows are unknown."""
    nodes = {k: node_law(np.array(p), np.array(q), None, atol=1e-12) for k, (p, q) in rows.items()}
    return nodes.get, lambda key, y: key + (y,)


def test_bounds_equal_the_chain_law_when_every_prefix_is_known():
    p = {(): [0.5, 0.5], (0,): [0.75, 0.25], (1,): [0.25, 0.75]}
    q = {(): [0.25, 0.75], (0,): [0.5, 0.5], (1,): [0.5, 0.5]}
    lookup, child = _tree({k: (p[k], q[k]) for k in p})
    law = verification_law(lambda s: [Fraction(x) for x in p.get(s, [0.5, 0.5])],
                           lambda s: [Fraction(x) for x in q.get(s, [0.5, 0.5])], 2)
    (lo1, hi1), (lo2, hi2) = emitted_bounds((), 2, lookup, child, {})
    assert lo1 == hi1 == 1 + Fraction(3, 4)
    # alpha = 3/4; children accept masses 1/4 (token 0) and 1/2 (token 1); alphas there 3/4 and 3/4
    assert lo2 == hi2 == law.expected_emitted == 1 + Fraction(3, 4) + Fraction(1, 4) * Fraction(3, 4) + Fraction(1, 2) * Fraction(3, 4)


def test_an_unknown_child_gives_exact_bounds_whose_gap_is_its_mass_times_the_depth_left():
    p = {(): [0.5, 0.5], (1,): [0.25, 0.75]}
    q = {(): [0.25, 0.75], (1,): [0.5, 0.5]}
    lookup, child = _tree({k: (p[k], q[k]) for k in p})
    bounds = emitted_bounds((), 3, lookup, child, {})
    # child 0 (accept mass 1/4) unknown: its own reach counts, its subtree within depth 2 lies in [0, 2] * 1/4
    lo2, hi2 = bounds[1]
    assert lo2 == 1 + Fraction(3, 4) + Fraction(1, 2) * Fraction(3, 4)
    assert hi2 - lo2 == Fraction(1, 4)
    lo3, hi3 = bounds[2]
    # at gamma 3 the known child's children are unknown too: gap 1/4 * 2 + 1/2 * (3/4 * 1)
    assert hi3 - lo3 == Fraction(1, 4) * 2 + Fraction(1, 2) * Fraction(3, 4)
    assert lo3 == lo2  # nothing below depth 2 is known, so only the own reaches count


def test_bounds_are_rounded_outward_on_the_grid():
    lookup = {(): Node(3, 1, ((0, 1),), 1 / 3), (0,): Node(3, 1, (), 1 / 3)}.get
    lo, hi = accepted_bounds((), 2, lookup, lambda k, y: k + (y,), {}, bits=4)
    exact = Fraction(1, 3) + Fraction(1, 3) * Fraction(1, 3)  # 4/9
    assert Fraction(lo, 16) <= exact <= Fraction(hi, 16) and hi - lo <= 2
    assert accepted_bounds((), 1, lambda k: None, lambda k, y: k, {}) == (0, 1 << GRID_BITS)
    with pytest.raises(InvalidDistribution, match="gamma_max"):
        emitted_bounds((), 0, lookup, lambda k, y: k, {})


def test_phone_source_bounds_match_the_chain_law_of_the_phone_model():
    from specproof.corpus.sources import PhoneSource
    from specproof.models.fixtures import phone_lm_chain

    pytest.importorskip("pocketsphinx")
    src = PhoneSource()
    docs = src.documents("The cat sat.")
    assert [src.labels[i] for i in docs[0]] == ["SIL", "SIL", "DH", "AH", "K", "AE", "T", "S", "AE", "T", "SIL"]
    state = (docs[0][3], docs[0][4])  # after "AH K"
    lookup, child, _ = src.tree(docs[0], {})
    bounds = emitted_bounds(state, 2, lookup, child, {})
    target, draft, _ = phone_lm_chain(tuple(src.labels[i] for i in state))
    exact = verification_law(target, draft, 2).expected_emitted
    lo, hi = bounds[1]
    assert lo <= exact <= hi and hi - lo <= Fraction(2, 1 << GRID_BITS)
    assert bounds[0][0] == 1 + verification_law(target, draft, 1).expected_accepted


def test_in_process_job_writes_shards_resumes_and_summarizes(tmp_path):
    pytest.importorskip("pocketsphinx")
    import pyarrow.parquet as pq

    from specproof.corpus.pipeline import Config, finish, plan, run_local, shard_path

    text = "The cat sat on the mat.\n\nA dog ran home."
    cfg = Config(pairs=("phone",), gamma_max=3)
    units, todo = plan(text, cfg, tmp_path)
    assert len(units) == len(todo) == 2
    run_local(todo[:1], cfg, tmp_path)
    assert plan(text, cfg, tmp_path)[1] == todo[1:]  # a rerun resumes from the shard written
    run_local(todo[1:], cfg, tmp_path)
    first = shard_path(tmp_path, units[0]).read_bytes()
    summary = finish(units, cfg, tmp_path)
    rows = pq.read_table(tmp_path / "corpus.parquet").to_pylist()
    assert len(rows) == sum(len(u["ids"]) - 2 for u in units)
    r = rows[0]
    assert Fraction(r["alpha"]) == Fraction(r["e_lo"][0]) - 1 == Fraction(r["e_hi"][0]) - 1
    assert abs(r["alpha_float"] - float(Fraction(r["alpha"]))) < 1e-12
    s = summary["pairs"]["phone"]
    assert s["positions"] == len(rows)
    for e in s["per_gamma"]:
        assert Fraction(e["exact"]["lo"]) <= Fraction(e["exact"]["hi"])
    assert s["per_gamma"][0]["eq1_minus_exact"]["lo_float"] <= 0 <= s["per_gamma"][0]["eq1_minus_exact"]["hi_float"]
    assert (tmp_path / "summary.md").read_text().startswith("# specproof corpus")
    # a rerun with every shard present computes nothing and rewrites the same file
    assert plan(text, cfg, tmp_path)[1] == []
    finish(units, cfg, tmp_path)
    assert shard_path(tmp_path, units[0]).read_bytes() == first
    # another text, or other settings of the exact work, never resume from these shards
    other_text = plan("The cat sat on a mat.\n\nA dog ran home.", cfg, tmp_path)[1]
    assert [u["doc"] for u in other_text] == [0]  # the second document is the same text
    assert len(plan(text, Config(pairs=("phone",), gamma_max=2), tmp_path)[1]) == 2
    assert len(plan(text, Config(pairs=("phone",), gamma_max=3, max_explore=4), tmp_path)[1]) == 2


def test_cli_corpus_runs_the_phone_pair(tmp_path):
    pytest.importorskip("pocketsphinx")
    from specproof.cli import main

    text = tmp_path / "t.txt"
    text.write_text("She sells sea shells.\n", encoding="utf-8")
    assert main(["corpus", "--pair", "phone", "--text", str(text), "--gamma-max", "2", "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "corpus.parquet").exists()
    assert main(["corpus", "--pair", "nonsense", "--text", str(text), "--out", str(tmp_path / "o2")]) == 2


def test_a_transformers_pair_fully_explored_at_depth_one_gives_the_chain_law_at_gamma_two():
    """Two tiny random Llama models (V = 50): every off-text child explored, so at gamma = 2 the bounds
    meet (up to the grid) and equal the chain law computed from full forward passes."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from specproof.corpus import pipeline
    from specproof.corpus.sources import TransformersSource
    from specproof.laws.rational import from_floats
    from specproof.models.smollm2 import softmax

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    target, draft = transformers.LlamaForCausalLM(cfg).eval(), transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in target.parameters():
            p.mul_(3)  # a sharper target: alpha well below 1
    src = TransformersSource("tiny-target", "tiny-draft")
    src._loaded = (None, target, draft)
    pipeline._SOURCES["tiny"] = src
    try:
        ids = [3, 7, 11, 2, 9]
        unit = {"pair": "tiny", "doc": 0, "ids": ids}
        cfg_job = pipeline.Config(pairs=("tiny",), gamma_max=2, mass_bound=0.0, max_explore=50)
        records = pipeline.infer_unit(unit, cfg_job)
        rows = pipeline.combine_unit(unit, pipeline.exact_records(records), cfg_job)
    finally:
        del pipeline._SOURCES["tiny"]

    def row(model, context):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([list(context)])).logits[0, -1].numpy()
        return from_floats(softmax(logits), atol=1e-9)

    from specproof.laws.exact import emitted_law

    assert [r["position"] for r in rows] == [1, 2, 3, 4]
    for r in rows[:2]:
        t = r["position"]
        root = emitted_law(row(target, ids[:t]), row(draft, ids[:t]))
        # E[emitted] at gamma = 2: 1 + alpha + sum_y min(p, q)(y) * alpha after y (Leviathan et al. Sec. 3.4)
        exact = 1 + root.alpha + sum(Fraction(a, root.denominator) * emitted_law(row(target, ids[:t] + [y]),
                                                                              row(draft, ids[:t] + [y])).alpha
                                     for y, a in enumerate(root.accept.tolist()) if a)
        lo, hi = Fraction(r["e_lo"][1]), Fraction(r["e_hi"][1])
        assert hi - lo <= Fraction(2, 1 << GRID_BITS)
        # teacher-forced and cached rows vs separate full forwards: float rounding only
        assert abs(float(lo - exact)) < 1e-5 and abs(float(Fraction(r["alpha"]) - root.alpha)) < 1e-6
        assert r["explored"] == 49 and 0.05 < float(root.alpha) < 0.95


def test_cli_corpus_on_any_hf_pair_by_path(tmp_path):
    """--pair TARGET,DRAFT loads two causal LMs and the target's tokenizer from directories."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    from specproof.cli import main

    words = ["[UNK]"] + "the a boat left harbour before dawn wind was cold and sea quiet".split()
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    torch.manual_seed(1)
    cfg = transformers.LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    for name in ("t", "d"):
        transformers.LlamaForCausalLM(cfg).save_pretrained(tmp_path / name)
        fast.save_pretrained(tmp_path / name)
    text = tmp_path / "text.txt"
    text.write_text("the boat left the harbour before dawn\n\nthe wind was cold and the sea was quiet\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["corpus", "--pair", f"{tmp_path / 't'},{tmp_path / 'd'}", "--text", str(text), "--gamma-max", "3",
                 "--max-explore", "2", "--out", str(out)]) == 0
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "corpus.parquet").to_pylist()
    assert [r["doc"] for r in rows] == [0] * 6 + [1] * 8  # positions 1..n-1 of each paragraph
    assert all(r["explored"] == 2 for r in rows)
    for r in rows:
        lo, hi = [Fraction(x) for x in r["e_lo"]], [Fraction(x) for x in r["e_hi"]]
        assert lo[0] == hi[0] == 1 + Fraction(r["alpha"])
        assert all(a <= b for a, b in zip(lo, hi)) and lo == sorted(lo) and hi[2] - lo[2] > 0


@pytest.mark.parametrize("option", [["--gamma-max", "0"], ["--gamma-max", "1000"], ["--mass-bound", "nan"],
                                    ["--mass-bound", "inf"], ["--mass-bound", "-1"], ["--max-explore", "-1"],
                                    ["--cost-ratio", "-1/2"], ["--cost-ratio", "abc"], ["--cost-ratio", "nan"],
                                    ["--level", "1/1" + "0" * 320],
                                    ["--level", "0"], ["--level", "1"], ["--bias", "-5"], ["--bias", "1e-1000"],
                                    ["--workers", "0"]])
def test_corpus_refuses_bad_options_before_any_work(tmp_path, capsys, option):
    pytest.importorskip("pyarrow")
    from specproof.cli import main

    assert main(["corpus", "--out", str(tmp_path / "out"), *option]) == 2
    assert option[0] in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_corpus_log_of_the_wrong_shape_is_a_clean_error(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from specproof.cli import main

    table = pa.table({"request": [0], "step": [0], "drafted": [3], "p_drafted": [0.5], "q_drafted": [0.5],
                      "accepted": [1]})  # scalars where the format has lists
    pq.write_table(table, tmp_path / "log.parquet")
    assert main(["corpus", "--log", str(tmp_path / "log.parquet")]) == 2
    err = capsys.readouterr().err
    assert "log.parquet" in err and "Traceback" not in err
