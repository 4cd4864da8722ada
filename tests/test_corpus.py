"""specproof.corpus: the per-position exact work, the phone source, the in-process pipeline and the CLI."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from specproof.corpus.job import (
    GRID_BITS,
    ContextNode,
    accepted_bounds,
    emitted_bounds,
    node_from_record,
    node_law,
    node_record,
)
from specproof.errors import InvalidDistribution
from specproof.laws.chain import verification_law

pytest.importorskip("pyarrow")


def test_import_specproof_imports_neither_pyarrow_nor_ray_nor_torch():
    code = (
        "import sys, specproof, specproof.corpus, specproof.cli.corpus, specproof.cli; "
        "print(sorted(m for m in ('pyarrow', 'ray', 'torch') if m in sys.modules))"
    )
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
    law = verification_law(
        lambda s: [Fraction(x) for x in p.get(s, [0.5, 0.5])], lambda s: [Fraction(x) for x in q.get(s, [0.5, 0.5])], 2
    )
    (lo1, hi1), (lo2, hi2) = emitted_bounds((), 2, lookup, child, {})
    assert lo1 == hi1 == 1 + Fraction(3, 4)
    # alpha = 3/4; children accept masses 1/4 (token 0) and 1/2 (token 1); alphas there 3/4 and 3/4
    assert (
        lo2
        == hi2
        == law.expected_emitted
        == 1 + Fraction(3, 4) + Fraction(1, 4) * Fraction(3, 4) + Fraction(1, 2) * Fraction(3, 4)
    )


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
    lookup = {(): ContextNode(3, 1, ((0, 1),), 1 / 3), (0,): ContextNode(3, 1, (), 1 / 3)}.get
    lo, hi = accepted_bounds((), 2, lookup, lambda k, y: k + (y,), {}, bits=4)
    exact = Fraction(1, 3) + Fraction(1, 3) * Fraction(1, 3)  # 4/9
    assert Fraction(lo, 16) <= exact <= Fraction(hi, 16) and hi - lo <= 2
    assert accepted_bounds((), 1, lambda k: None, lambda k, y: k, {}) == (0, 1 << GRID_BITS)
    with pytest.raises(InvalidDistribution, match="gamma_max"):
        emitted_bounds((), 0, lookup, lambda k, y: k, {})


def test_phone_source_rows_are_cached_per_source_and_freed_with_it():
    # the rows and state nodes were cached by functools.cache on the methods, whose cache held every
    # source alive for the life of the process (ruff B019); the cache is now the source's own
    import gc
    import weakref

    from specproof.corpus.sources import PhoneSource

    src = PhoneSource()
    s = (src.index["DH"], src.index["AH"])
    p, q = src.rows(s)
    assert src.rows(s)[0] is p and src.rows(s)[1] is q
    assert src.state_node(s) is src.state_node(s)
    assert PhoneSource().rows(s)[0] is not p and np.array_equal(PhoneSource().rows(s)[0], p)
    gone = weakref.ref(src)
    del src, p, q
    gc.collect()
    assert gone() is None


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
    assert (
        main(["corpus", "--pair", "phone", "--text", str(text), "--gamma-max", "2", "--out", str(tmp_path / "o")]) == 0
    )
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
    cfg = transformers.LlamaConfig(
        vocab_size=50,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    target, draft = transformers.LlamaForCausalLM(cfg).eval(), transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in target.parameters():
            p.mul_(3)  # a sharper target: alpha well below 1
    src = TransformersSource("tiny-target", "tiny-draft")
    src._loaded = (None, target, draft)
    pipeline._SOURCES["tiny"] = src
    try:
        ids = [3, 7, 11]  # positions 1 and 2: each explored at depth one with all 49 off-text children
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

    assert [r["position"] for r in rows] == [1, 2]
    for r in rows:
        t = r["position"]
        root = emitted_law(row(target, ids[:t]), row(draft, ids[:t]))
        # E[emitted] at gamma = 2: 1 + alpha + sum_y min(p, q)(y) * alpha after y (Leviathan et al. Sec. 3.4)
        exact = (
            1
            + root.alpha
            + sum(
                Fraction(a, root.denominator) * emitted_law(row(target, ids[:t] + [y]), row(draft, ids[:t] + [y])).alpha
                for y, a in enumerate(root.accept_numerators.tolist())
                if a
            )
        )
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
    cfg = transformers.LlamaConfig(
        vocab_size=len(words),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
    )
    for name in ("t", "d"):
        transformers.LlamaForCausalLM(cfg).save_pretrained(tmp_path / name)
        fast.save_pretrained(tmp_path / name)
    text = tmp_path / "text.txt"
    text.write_text(
        "the boat left the harbour before dawn\n\nthe wind was cold and the sea was quiet\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "corpus",
                "--pair",
                f"{tmp_path / 't'},{tmp_path / 'd'}",
                "--text",
                str(text),
                "--gamma-max",
                "3",
                "--max-explore",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "corpus.parquet").to_pylist()
    assert [r["doc"] for r in rows] == [0] * 6 + [1] * 8  # positions 1..n-1 of each paragraph
    assert all(r["explored"] == 2 for r in rows)
    for r in rows:
        lo, hi = [Fraction(x) for x in r["e_lo"]], [Fraction(x) for x in r["e_hi"]]
        assert lo[0] == hi[0] == 1 + Fraction(r["alpha"])
        assert all(a <= b for a, b in zip(lo, hi)) and lo == sorted(lo) and hi[2] - lo[2] > 0


@pytest.mark.parametrize(
    "option",
    [
        ["--gamma-max", "0"],
        ["--gamma-max", "1000"],
        ["--mass-bound", "nan"],
        ["--mass-bound", "inf"],
        ["--mass-bound", "-1"],
        ["--max-explore", "-1"],
        ["--cost-ratio", "-1/2"],
        ["--cost-ratio", "abc"],
        ["--cost-ratio", "nan"],
        ["--level", "1/1" + "0" * 320],
        ["--level", "0"],
        ["--level", "1"],
        ["--bias", "-5"],
        ["--bias", "1e-1000"],
        ["--workers", "0"],
    ],
)
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

    table = pa.table(
        {"request": [0], "step": [0], "drafted": [3], "p_drafted": [0.5], "q_drafted": [0.5], "accepted": [1]}
    )  # scalars where the format has lists
    pq.write_table(table, tmp_path / "log.parquet")
    assert main(["corpus", "--log", str(tmp_path / "log.parquet")]) == 2
    err = capsys.readouterr().err
    assert "log.parquet" in err and "Traceback" not in err


def _toy_masses(t, path, v=5):
    """Deterministic accept masses (sum < 1) for a toy drafting tree, different at every prefix."""
    rng = np.random.default_rng([t, len(path), *path])
    m = rng.random(v) ** 3
    return m / m.sum() * rng.uniform(0.3, 0.9)


def _worths(t, skip, gamma, depth_max):
    """Every off-text prefix below position t (depth <= depth_max) and its worth reach * (gamma - depth)."""
    out, level = {}, [((), 1.0)]
    for d in range(1, depth_max + 1):
        nxt = []
        for path, reach in level:
            m = _toy_masses(t, path)
            for y in range(len(m)):
                if d == 1 and y == skip:
                    continue
                r = reach * m[y]
                out[path + (y,)] = r * (gamma - d)
                nxt.append((path + (y,), r))
        level = nxt
    return out


def test_explore_is_best_first_over_every_depth():
    from specproof.corpus.job import explore

    gamma, calls = 4, []

    def expand(nodes):
        calls.append(len(nodes))
        return [_toy_masses(t, path) for t, path in nodes]

    roots = {7: (_toy_masses(7, ()), 0), 8: (_toy_masses(8, ()), None)}
    got = explore(roots, expand, gamma_max=gamma, mass_bound=0.0, max_explore=12, per_round=1)
    assert got[8] == []  # the text's end: nothing after it is explored
    worth = _worths(7, 0, gamma, gamma - 1)
    best = sorted(worth, key=lambda s: -worth[s])[:12]
    assert sorted(got[7]) == sorted(best) and max(len(s) for s in best) >= 2  # deeper than depth 1
    assert all(s[:-1] in got[7][:i] or len(s) == 1 for i, s in enumerate(got[7]))  # parents first
    assert calls == [1] * 12
    # rounds of 4: the same budget, three batched calls; depth-3 prefixes are never worth exploring
    calls.clear()
    got4 = explore(roots, expand, gamma_max=gamma, mass_bound=0.0, max_explore=12, per_round=4)
    assert calls == [4, 4, 4] and len(got4[7]) == 12 and max(len(s) for s in got4[7]) <= gamma - 1
    assert explore(roots, expand, gamma_max=1, mass_bound=0.0, max_explore=12) == {7: [], 8: []}
    assert explore(roots, expand, gamma_max=4, mass_bound=0.0, max_explore=0) == {7: [], 8: []}


def test_explore_stops_once_the_unexplored_worth_is_within_the_mass_bound():
    from specproof.corpus.job import explore

    gamma = 3
    m0 = _toy_masses(7, ())

    def left(explored):
        """Unexplored worth: each explored node's (and the root's) unexplored children, times depth left."""
        total = 0.0
        for node in [()] + explored:
            reach = np.prod([_toy_masses(7, node[:i])[node[i]] for i in range(len(node))]) if node else 1.0
            depth_left = gamma - len(node) - 1
            m = _toy_masses(7, node)
            kids = [y for y in range(len(m)) if node + (y,) in explored or (not node and y == 0)]
            total += reach * (m.sum() - m[kids].sum()) * depth_left
        return total

    for bound in (0.5, 0.2, 0.1):
        got = explore(
            {7: (m0, 0)},
            lambda nodes: [_toy_masses(t, p) for t, p in nodes],
            gamma_max=gamma,
            mass_bound=bound,
            max_explore=100,
            per_round=1,
        )[7]
        assert left(got) <= bound < left(got[:-1])


def test_a_transformers_pair_explored_below_depth_one_gives_exact_bounds_at_gamma_three():
    """Two tiny random Llama models (V = 5): every off-text prefix to depth 2 explored, the gamma-3 bounds
    meet (up to the grid) at the chain law from full forward passes; with a budget of 12 prefixes the
    bounds contain it, and deeper prefixes are among those explored."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only contend
    try:
        _tiny_gamma_three(torch, transformers)
    finally:
        torch.set_num_threads(threads)


def _tiny_gamma_three(torch, transformers):

    from specproof.corpus import pipeline
    from specproof.corpus.sources import TransformersSource
    from specproof.laws.rational import from_floats
    from specproof.models.smollm2 import softmax

    torch.manual_seed(3)
    cfg = transformers.LlamaConfig(
        vocab_size=5,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
    )
    target, draft = transformers.LlamaForCausalLM(cfg).eval(), transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in target.parameters():
            p.mul_(4)
    src = TransformersSource("tiny-target", "tiny-draft")
    src._loaded = (None, target, draft)
    ids = [3, 1, 0, 2, 4, 1]
    unit = {"pair": "tiny3", "doc": 0, "ids": ids}
    pipeline._SOURCES["tiny3"] = src
    try:
        full = pipeline.Config(pairs=("tiny3",), gamma_max=3, mass_bound=0.0, max_explore=4 + 4 * 5)
        records = pipeline.infer_unit(unit, full)
        rows = pipeline.combine_unit(unit, pipeline.exact_records(records), full)
        budget = pipeline.Config(pairs=("tiny3",), gamma_max=3, mass_bound=0.0, max_explore=8)
        records5 = pipeline.infer_unit(unit, budget)
        rows5 = pipeline.combine_unit(unit, pipeline.exact_records(records5), budget)
    finally:
        del pipeline._SOURCES["tiny3"]

    @functools.cache
    def row(model, context):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([list(context)])).logits[0, -1].numpy()
        return from_floats(softmax(logits), atol=1e-9)

    assert max(r["key"].count(",") for r in records5) >= 1  # a depth-2 prefix was explored
    assert [r["explored"] for r in rows] == [4 + 4 * 5] * 5 and [r["explored"] for r in rows5] == [8] * 5
    for r, r5 in zip(rows[:4:3], rows5[:4:3]):  # positions 1 and 4 (1..4 have every row their step needs)
        ctx = tuple(ids[: r["position"]])
        exact = verification_law(
            lambda s, c=ctx: row(target, c + s), lambda s, c=ctx: row(draft, c + s), 3
        ).expected_emitted
        lo, hi = Fraction(r["e_lo"][2]), Fraction(r["e_hi"][2])
        assert hi - lo <= Fraction(3, 1 << GRID_BITS) and abs(float(lo - exact)) < 1e-5
        lo5, hi5 = Fraction(r5["e_lo"][2]), Fraction(r5["e_hi"][2])
        assert lo5 - Fraction(1, 10**5) <= exact <= hi5 + Fraction(1, 10**5) and hi5 - lo5 > Fraction(1, 1000)


def test_corpus_help_states_every_default(capsys):
    import re

    from specproof.cli import main
    from specproof.corpus.pipeline import Config

    assert main(["corpus", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    cfg = Config()
    for option, default in (
        ("--gamma-max", cfg.gamma_max),
        ("--mass-bound", cfg.mass_bound),
        ("--max-explore", cfg.max_explore),
        ("--cost-ratio", cfg.cost_ratio),
        ("--level", "1/1000"),
        ("--bias", "1/20"),
        ("--workers", 2),
    ):
        after = text.rsplit(f"{option} {option.lstrip('-').upper().replace('-', '_')}", 1)[1]  # its help, not the usage
        assert f"(default {default})" in re.split(r" --[a-z-]+ [A-Z[]", after, maxsplit=1)[0], option


def test_corpus_refuses_a_text_with_nothing_to_compute(tmp_path, capsys):
    pytest.importorskip("pocketsphinx")
    from specproof.cli import main

    text = tmp_path / "empty.txt"
    text.write_text("\n\n   \n", encoding="utf-8")
    assert main(["corpus", "--pair", "phone", "--text", str(text), "--out", str(tmp_path / "out")]) == 2
    assert "has no paragraph of at least two tokens for phone" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_corpus_names_the_pair_whose_model_does_not_load(tmp_path, capsys):
    pytest.importorskip("transformers")
    from specproof.cli import main

    text = tmp_path / "t.txt"
    text.write_text("a b c\n", encoding="utf-8")
    pair = f"{tmp_path / 'no-target'},{tmp_path / 'no-draft'}"
    assert main(["corpus", "--pair", pair, "--text", str(text), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"--pair {pair}: " in err and "Traceback" not in err
