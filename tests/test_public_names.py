"""No two public objects share a name with different meanings (issue 34): every name in the
``__all__`` of every specproof module is one object wherever it is exported."""

from __future__ import annotations

import importlib
import pkgutil
from collections import defaultdict

import pytest

import specproof

#: One contract in several arithmetics or sources (the same signature and meaning: the exact, float
#: and symbolic laws of the seed's functions; each real model adapter's vocabulary and provenance): one name on
#: purpose.
SAME_CONTRACT = {
    "emitted_distribution",
    "acceptance_probability",
    "residual",
    "tv_distance",
    "given_block_law",
    "multidraft_law",
    "vocabulary",
    "provenance",
}

#: Names still exported by two modules as different objects; each leaves this list when one is renamed.
KNOWN: set[str] = set()


MISSING: list[str] = []  # modules not imported here (their optional extra is not installed)


def _public() -> dict[str, set[str]]:
    """name -> the qualified names of the distinct objects exported under it."""
    seen: dict[str, dict[int, str]] = defaultdict(dict)
    for info in pkgutil.walk_packages(specproof.__path__, "specproof."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra (torch, numba, pyarrow, ray) not installed
            MISSING.append(info.name)
            continue
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if callable(obj) or isinstance(obj, type):
                seen[name].setdefault(id(obj), f"{info.name}.{name}")
    return {name: set(objs.values()) for name, objs in seen.items() if len(objs) > 1}


def test_no_public_name_means_two_things():
    clashes = {n: v for n, v in _public().items() if n not in SAME_CONTRACT}
    assert set(clashes) - KNOWN == set(), {n: clashes[n] for n in set(clashes) - KNOWN}
    if not MISSING:  # with every module imported, a listed clash that is gone must leave the list
        assert KNOWN - set(clashes) == set(), "renamed: take them off KNOWN"


def test_the_renamed_audit_record_warns_where_it_went():
    import pytest

    from specproof.rules import audit

    with pytest.warns(DeprecationWarning, match="now PositionRuleLaw"):
        assert audit.PositionLaw is audit.PositionRuleLaw


def test_the_renamed_tracer_names_warn_where_they_went():
    import pytest

    pytest.importorskip("torch")
    from specproof.trace import testing, tracer
    from specproof.trace.adapters import transformers

    with pytest.warns(DeprecationWarning, match="now rows_stream_tv"):
        assert tracer.stream_tv is tracer.rows_stream_tv
    with pytest.warns(DeprecationWarning, match="now LossyInput"):
        assert testing.Counterexample is testing.LossyInput
    with pytest.warns(DeprecationWarning, match="now speculative_sampling_law"):
        assert transformers.block_law is transformers.speculative_sampling_law


@pytest.mark.parametrize(
    "module, old, new",
    [
        ("specproof.certify.certificate", "exact_text", "fraction_text"),
        ("specproof.certify.variants_proof", "render", "render_variants_proof"),
        ("specproof.certify.variants_proof", "run", "write_variants_proof"),
        ("specproof.rules.libm", "provenance", "library_provenance"),
        ("specproof.corpus.job", "Node", "ContextNode"),
    ],
)
def test_a_renamed_name_warns_where_it_went(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{old} is now {new}"):
        assert getattr(mod, old) is getattr(mod, new)
