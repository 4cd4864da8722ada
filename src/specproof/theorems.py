"""The theorems specproof proves, each on its embedded default inputs.

Every theorem writes one JSON document (a certificate bundle, or the symbolic proof record)
and one Markdown transcript into an output directory, re-reads the JSON from disk, has the
trusted checker re-verify it, and reports an :class:`Outcome`. The runnable scripts in
``proofs/`` and ``specproof prove`` both call :func:`prove`.
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from specproof import checker
from specproof.certify import certificate, crosscheck
from specproof.errors import SpecProofError
from specproof.laws.rational import from_floats
from specproof.report import transcript

__all__ = ["Outcome", "THEOREMS", "prove", "prove_all", "run_parallel", "distributions", "run_script"]


@dataclass(frozen=True)
class Outcome:
    """What one theorem's proof run produced.

    Attributes
    ----------
    theorem : str
        The theorem's key in :data:`THEOREMS`.
    title : str
        One line saying what it proves.
    instances : int
        Number of instances certified (1 for the symbolic proof, which covers every V).
    proved : bool
        True iff the checker (or, for the symbolic proof, SymPy) verified everything.
    json_path, md_path : pathlib.Path
        The document and the transcript written.
    detail : str
        The verdict's detail or reason.
    formal : str
        For the symbolic theorem, one line saying whether the Coq proofs were compiled and
        found closed on this machine (and in how many seconds), or that the formal check was not
        run (no coqc, or ``coq=False``);
        "" for the other theorems.
    seconds : float
        Wall time of the proof run (building, writing, checking, rendering), in its own process.
    """

    theorem: str
    title: str
    instances: int
    proved: bool
    json_path: Path
    md_path: Path
    detail: str
    formal: str = ""
    seconds: float = 0.0


def distributions(v: int, max_den: int) -> list[tuple[Fraction, ...]]:
    """Every distribution of length ``v`` whose entries are k/d with d <= ``max_den``, sorted.

    Examples
    --------
    >>> len(distributions(2, 2)), distributions(1, 6)
    (3, [(Fraction(1, 1),)])
    """
    seen = set()
    for d in range(1, max_den + 1):
        for ks in itertools.product(range(d + 1), repeat=v):
            if sum(ks) == d:
                seen.add(tuple(Fraction(k, d) for k in ks))
    return sorted(seen)


def _finish(key: str, document: dict[str, Any], out_dir: Path, instances: int) -> Outcome:
    json_path = certificate.write(document, out_dir / f"{key}.json")
    loaded = json_path.read_text(encoding="utf-8")
    if document["schema"] == "specproof.symbolic-proof/1":
        proved = bool(document["proved"])
        detail = "all steps verified by SymPy" if proved else "a step was not verified"
        verdict = None
    else:
        verdict = checker.check(loaded)  # the checker sees only the bytes on disk
        proved, detail = verdict.valid, verdict.detail
    text = transcript.render(certificate.json.loads(loaded), verdict, json_name=json_path.name)
    md_path = out_dir / f"{key}.md"
    md_path.write_text(text, encoding="utf-8", newline="\n")
    return Outcome(key, THEOREMS[key][0], instances, proved, json_path, md_path, detail)


# ---------------------------------------------------------------- the seed's cases


def _seed_visible_pair() -> tuple[Any, Any]:
    """The first pair of the seed's visible tests (Dirichlet floats), made exact."""
    rng = np.random.default_rng(0)
    v = int(rng.integers(2, 40))
    p, q = rng.dirichlet(np.ones(v)), rng.dirichlet(np.ones(v) * 0.3)
    return from_floats(p, name="p"), from_floats(q, name="q")


_SEED_CASES: list[tuple[str, str, Callable[[], tuple[Any, Any]]]] = [
    (
        "identical-draft",
        "q == p: the residual is empty, alpha = 1.",
        lambda: (("1/6", "1/3", "1/2"), ("1/6", "1/3", "1/2")),
    ),
    (
        "draft-never-proposes",
        "q(x) = 0 where p(x) > 0 (token 1): it is emitted only through the residual.",
        lambda: (("1/2", "1/4", "1/4"), ("1/2", 0, "1/2")),
    ),
    (
        "target-never-wants",
        "p(x) = 0 where q(x) > 0 (token 2): drafted but always rejected, emitted mass 0.",
        lambda: (("2/3", "1/3", 0), ("1/3", "1/3", "1/3")),
    ),
    (
        "disjoint-supports",
        "p and q share no token: every draft is rejected, alpha = 0.",
        lambda: (("1/2", "1/2", 0, 0), (0, 0, "1/4", "3/4")),
    ),
    ("one-token-vocabulary", "V = 1: p = q = (1).", lambda: ((1,), (1,))),
    (
        "seed-visible-pair",
        "The first Dirichlet pair of the seed's visible tests (numpy seed 0), float64 "
        "made exact by the dyadic-renormalize policy.",
        _seed_visible_pair,
    ),
]


def _seed_cases(out_dir: Path) -> Outcome:
    certs = []
    for name, note, make in _SEED_CASES:
        p, q = make()
        certs.append(certificate.build_certificate(p, q, name=name, provenance={"note": note}))
    doc = certificate.build_bundle(
        certs,
        name="seed-cases",
        statement="On each of the seed's edge cases, the emitted law equals the target p and alpha = 1 - TV(p, q).",
        provenance={"source": "specproof.theorems (embedded cases)"},
    )
    return _finish("seed_cases", doc, out_dir, len(certs))


# ---------------------------------------------------------------- alpha = 1 - TV on random pairs

_RANDOM_PAIRS = 27
_RANDOM_SEED = 2024


def _alpha_tv(out_dir: Path) -> Outcome:
    certs = []
    for i, pair in enumerate(crosscheck.pairs(_RANDOM_PAIRS, _RANDOM_SEED)):
        certs.append(
            certificate.build_certificate(pair.p, pair.q, name=f"{pair.kind}-{i}", provenance={"kind": pair.kind})
        )
    doc = certificate.build_bundle(
        certs,
        name="alpha-equals-one-minus-tv",
        statement="alpha = sum_x min(p(x), q(x)) equals 1 - TV(p, q) = 1 - (1/2) sum_x |p(x) - q(x)| "
        "(and the emitted law equals p) on random rational pairs of every kind.",
        provenance={
            "source": "specproof.certify.crosscheck.pairs",
            "pairs": _RANDOM_PAIRS,
            "seed": _RANDOM_SEED,
            "kinds": list(crosscheck.KINDS),
        },
    )
    return _finish("alpha_tv", doc, out_dir, len(certs))


# ---------------------------------------------------------------- the exhaustive small grid

GRID_MAX_V = 3
GRID_MAX_DEN = 4


def _small_grid(out_dir: Path) -> Outcome:
    certs = []
    for v in range(1, GRID_MAX_V + 1):
        dists = distributions(v, GRID_MAX_DEN)
        for i, p in enumerate(dists):
            for j, q in enumerate(dists):
                certs.append(certificate.build_certificate(p, q, name=f"V{v}-p{i}-q{j}"))
    doc = certificate.build_bundle(
        certs,
        name="exhaustive-small-grid",
        statement=f"For every pair of distributions with V <= {GRID_MAX_V} whose entries have "
        f"denominators <= {GRID_MAX_DEN}, the emitted law equals p and alpha = 1 - TV.",
        provenance={"source": "specproof.theorems.distributions", "max_v": GRID_MAX_V, "max_denominator": GRID_MAX_DEN},
    )
    return _finish("small_grid", doc, out_dir, len(certs))


# ---------------------------------------------------------------- real models

#: Real pairs with more tokens than this get compact certificates (float inputs, chosen rows).
COMPACT_ABOVE_V = 1000


def _real_bundle(key: str, pairs: list, name: str, statement: str, out_dir: Path) -> Outcome:
    certs = []
    for rp in pairs:
        info = {
            **rp.provenance,
            "context": rp.context,
            "note": f"context: {rp.context!r}; target: {rp.provenance.get('target', '')}; draft: {rp.draft}",
        }
        if len(rp.p) > COMPACT_ABOVE_V:
            certs.append(
                certificate.build_compact_certificate(
                    rp.p_floats, rp.q_floats, name=rp.name, atol=rp.atol, labels=rp.labels, provenance=info
                )
            )
        else:
            certs.append(certificate.build_certificate(rp.p, rp.q, name=rp.name, labels=rp.labels, provenance=info))
    first = pairs[0]
    model_info = {
        k: first.provenance[k]
        for k in ("package", "version", "model_file", "sha256", "conversion")
        if k in first.provenance
    }
    doc = certificate.build_bundle(
        certs,
        name=name,
        statement=statement,
        provenance={
            "source": "specproof.models.fixtures",
            "model": first.model,
            **model_info,
            "float_policy": f"dyadic-renormalize, atol {first.atol!r}",
            "certificates": "compact (float64 inputs, claimed rows where they matter)"
            if len(first.p) > COMPACT_ABOVE_V
            else "full (one row per token)",
        },
    )
    return _finish(key, doc, out_dir, len(certs))


def _real_phone_lm(out_dir: Path) -> Outcome:
    from specproof.models.fixtures import phone_lm_pairs

    return _real_bundle(
        "real_phone_lm",
        list(phone_lm_pairs()),
        "real-pairs-phone-lm",
        "On real next-token distributions of the CMU Sphinx English phone trigram model (pocketsphinx), "
        "with the bigram and the unigram model as drafts, the emitted law equals the target and "
        "alpha = 1 - TV.",
        out_dir,
    )


def _real_smollm2(out_dir: Path) -> Outcome:
    from specproof.models.fixtures import smollm2_pairs

    return _real_bundle(
        "real_smollm2",
        list(smollm2_pairs()),
        "real-pairs-smollm2",
        "On real next-token distributions of SmolLM2-135M-Instruct (V = 49,152) after six prompts, "
        "with a layer-skipping self-draft, a 3-bit re-quantized self-draft and the same model at "
        "temperature 0.7 as drafts, the emitted law equals the target and alpha = 1 - TV.",
        out_dir,
    )


# ---------------------------------------------------------------- chains on the phone model

CHAIN_CONTEXTS = (("HH", "AH"), ("S", "T"), ("AH", "N"))
CHAIN_GAMMAS = (1, 2, 3)


def chain_bundle() -> dict[str, Any]:
    """Chain certificates on the phone model: every context of :data:`CHAIN_CONTEXTS` and
    gamma in :data:`CHAIN_GAMMAS`, target = trigram, draft = bigram; deterministic."""
    from specproof.models.fixtures import PHONE_END, phone_lm_chain

    certs = []
    for context in CHAIN_CONTEXTS:
        target, draft, labels = phone_lm_chain(context)
        for gamma in CHAIN_GAMMAS:
            certs.append(
                certificate.build_chain_certificate(
                    target,
                    draft,
                    gamma,
                    name=f"phone-{'-'.join(context)}-gamma-{gamma}",
                    labels=labels,
                    stop_tokens=[labels.index(PHONE_END)],
                    provenance={
                        "source": "specproof.models.fixtures.phone_lm_chain",
                        "context": " ".join(context),
                        "target": "trigram",
                        "draft": "bigram",
                    },
                )
            )
    bundle = certificate.build_bundle(
        certs,
        name="chain-phone-lm",
        statement="On the CMU Sphinx phone trigram model (target) with its bigram model as the draft, "
        "after each context, one block verification step with gamma drafted tokens and the bonus "
        "token, continued by target sampling, gives the first gamma + 1 tokens the target's joint law; "
        "the block ends at its first </s>, and E[emitted] counts the tokens up to and including it.",
        provenance={
            "source": "specproof.models.fixtures.phone_lm_chain",
            "contexts": [" ".join(c) for c in CHAIN_CONTEXTS],
            "gammas": list(CHAIN_GAMMAS),
        },
    )
    bundle["assumptions"] = [
        "Exact rows: the model's floats made exact by dyadic-renormalize (atol 1e-3).",
        "</s> ends the utterance: the block stops at an accepted </s> (no draft, no bonus token after it), and "
        "tokens after the first </s> are neither emitted nor counted (the model has no rows after </s>; for the "
        "stream law both models repeat </s>).",
    ]
    return bundle


def _chain(out_dir: Path) -> Outcome:
    return _finish("chain_phone_lm", chain_bundle(), out_dir, len(CHAIN_CONTEXTS) * len(CHAIN_GAMMAS))


# ---------------------------------------------------------------- every V, symbolically


def _symbolic(out_dir: Path, coq: bool = True) -> Outcome:
    from specproof.certify.symbolic_proof import check_coq, prove_every_v  # SymPy work only when asked for

    outcome = _finish("symbolic_every_v", prove_every_v(), out_dir, 1)
    # The Coq proofs, when coqc is here and ``coq`` (16 s on two cores, December 2026); without Coq the
    # check is reported as not run, which fails nothing. A Coq proof that does not compile or is not
    # closed fails it.
    formal: dict[str, Any]
    if not coq:
        formal = {
            "passed": None,
            "seconds": 0.0,
            "summary": "formal check (Coq) not run: --no-coq (the Coq proofs in proofs/coq are checked by .ci/run)",
        }
    else:
        formal = check_coq()
    summary = formal["summary"] + (f" ({formal['seconds']:.0f} s)" if formal["passed"] is not None else "")
    return dataclasses.replace(
        outcome,
        proved=outcome.proved and formal["passed"] is not False,
        detail=f"{outcome.detail}; {summary}",
        formal=summary,
    )


#: key -> (title, runner). Keys are the proof scripts' names in ``proofs/``.
def _variants_positions(out_dir: Path) -> Outcome:
    from specproof.certify.variants_proof import position_certificates

    bundle = position_certificates()
    return _finish("variants_positions", bundle, out_dir, len(bundle["certificates"]))


def block_verification_bundle() -> dict[str, Any]:
    """Block certificates of block verification (Sun et al. 2024, Algorithm 2): their binary
    example and the worked pair at gamma 1..3, and edge rows (p == q, zeros in p and q,
    disjoint supports) at gamma 2; each claims lossless, which the checker re-derives."""
    from specproof.certify.blocks import block_verification_certificate
    from specproof.certify.variants_proof import PAPER_MB, PAPER_MS, WORKED_P, WORKED_Q

    # (name, p, q, gamma): p and q as Fractions or "n/d" strings
    cases: list[tuple[str, Sequence[Fraction | str], Sequence[Fraction | str], int]]
    cases = [(f"paper example, gamma {g}", PAPER_MB, PAPER_MS, g) for g in (1, 2, 3)]
    cases += [(f"worked pair, gamma {g}", WORKED_P, WORKED_Q, g) for g in (1, 2, 3)]
    cases += [
        ("p == q (every residual empty)", ["1/2", "1/2"], ["1/2", "1/2"], 2),
        ("zeros in p and q", ["1/2", "1/2", "0"], ["0", "1/2", "1/2"], 2),
        ("disjoint supports", ["1", "0"], ["0", "1"], 2),
    ]
    certs = [
        block_verification_certificate(
            p, q, g, name=name, provenance={"target": [str(x) for x in p], "draft": [str(x) for x in q]}
        )
        for name, p, q, g in cases
    ]
    return certificate.build_bundle(
        certs,
        name="block verification",
        provenance={"source": "specproof.certify.blocks.block_verification_certificate"},
        statement="Block verification (Sun et al. 2024, Algorithm 2; the same rows after every prefix) is lossless on "
        "each input: the emitted block, continued by sampling the target, has the target's joint law over "
        "gamma + 1 tokens. Its expected accepted drafts on the paper's binary example at gamma 2 are 11/9 "
        "(token verification: 10/9).",
    )


def _block_verification(out_dir: Path) -> Outcome:
    bundle = block_verification_bundle()
    return _finish("block_verification", bundle, out_dir, len(bundle["certificates"]))


THEOREMS: dict[str, tuple[str, Callable[[Path], Outcome]]] = {
    "seed_cases": ("emitted law == p on the seed's edge cases", _seed_cases),
    "alpha_tv": ("alpha == 1 - TV on random rational pairs", _alpha_tv),
    "small_grid": (f"every pair, V <= {GRID_MAX_V}, denominators <= {GRID_MAX_DEN}", _small_grid),
    "symbolic_every_v": ("lossless for every V (SymPy)", _symbolic),
    "real_phone_lm": ("real pairs: phone trigram vs bigram/unigram", _real_phone_lm),
    "real_smollm2": ("real pairs: SmolLM2-135M vs skip/3-bit/T=0.7 drafts", _real_smollm2),
    "chain_phone_lm": ("chains: phone trigram vs bigram, gamma 1..3", _chain),
    "variants_positions": ("multi-draft, token-tree and typical positions (outcome trees)", _variants_positions),
    "block_verification": ("block verification, gamma 1..3 (block certificates)", _block_verification),
}


def prove(key: str, out_dir: str | Path, *, coq: bool = True) -> Outcome:
    """Run one theorem's proof; write ``KEY.json`` and ``KEY.md`` into ``out_dir``.

    Parameters
    ----------
    key : str
        One of :data:`THEOREMS`.
    out_dir : str or pathlib.Path
        Created if missing.
    coq : bool
        For ``symbolic_every_v``: also compile the Coq proofs (proofs/coq) when ``coqc`` is on
        ``PATH`` (:func:`specproof.certify.symbolic_proof.check_coq`; its seconds are in the summary).
        False reports the formal check as not run. Ignored by the other theorems.

    Returns
    -------
    Outcome

    Raises
    ------
    SpecProofError
        If ``key`` is not a theorem.
    """
    if key not in THEOREMS:
        raise SpecProofError(f"unknown theorem {key!r}; expected one of {sorted(THEOREMS)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    outcome = _symbolic(out, coq) if key == "symbolic_every_v" else THEOREMS[key][1](out)
    return dataclasses.replace(outcome, seconds=time.perf_counter() - start)


def prove_all(out_dir: str | Path, *, jobs: int = 1, coq: bool = True) -> list[Outcome]:
    """Run every theorem in :data:`THEOREMS` into ``out_dir``; return their outcomes in order.

    ``jobs`` > 1 runs them in that many worker processes (see :func:`run_parallel`); the files
    written and the outcomes (but their ``seconds``) are the same. ``coq`` as in :func:`prove`.
    """
    tasks = {key: (prove if coq else prove_without_coq, (key, out_dir)) for key in THEOREMS}
    done = {key: outcome for key, outcome in run_parallel(tasks, jobs)}
    return [done[key] for key in THEOREMS]


def prove_without_coq(key: str, out_dir: str | Path) -> Outcome:
    """:func:`prove` with ``coq=False`` (module-level, so a worker process can run it)."""
    return prove(key, out_dir, coq=False)


#: Seconds each theorem took once (2-core machine, one process, load about 1): only to start the longest first, so
#: that two workers finish together. Unlisted tasks count as 0 (quick ones run last).
EXPECTED_SECONDS = {"chain_phone_lm": 13.0, "symbolic_every_v": 8.0, "real_smollm2": 5.0, "findings": 2.5}


def run_parallel(tasks: Mapping[str, tuple[Callable[..., Any], Sequence[Any]]], jobs: int) -> Iterator[tuple[str, Any]]:
    """Run independent tasks, ``name -> (function, args)``, yielding ``(name, result)`` as each finishes.

    With ``jobs`` <= 1 (or one task) they run in this process, in the given order. Otherwise in
    ``min(jobs, len(tasks))`` fresh worker processes (the ``spawn`` start method: nothing is
    inherited but the arguments, so it is safe after torch or BLAS threads started; a script that
    calls this must guard its entry point with ``if __name__ == "__main__"``), longest expected
    first (:data:`EXPECTED_SECONDS`); functions and arguments must be picklable (module-level).
    A task's exception is raised here, and the tasks not yet started are cancelled.
    """
    if jobs <= 1 or len(tasks) <= 1:
        for name, (fn, args) in tasks.items():
            yield name, fn(*args)
        return
    order = sorted(tasks, key=lambda name: -EXPECTED_SECONDS.get(name, 0.0))  # stable: given order for ties
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
        futures = {pool.submit(tasks[name][0], *tasks[name][1]): name for name in order}
        pending = set(futures)
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: order.index(futures[f])):
                    yield futures[future], future.result()
        finally:
            for future in pending:
                future.cancel()


def run_script(key: str, script: str) -> int:
    """Entry point of ``proofs/KEY.py``: prove into ``proofs/transcripts``; exit 0 iff proved."""
    out = Path(script).resolve().parent / "transcripts"
    outcome = prove(key, out)
    status = "PROVED" if outcome.proved else "NOT PROVED"
    print(f"{outcome.title}: {status} ({outcome.instances} instance(s)); {outcome.detail}")
    print(f"  {outcome.json_path}\n  {outcome.md_path}")
    return 0 if outcome.proved else 1
