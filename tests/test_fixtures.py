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
