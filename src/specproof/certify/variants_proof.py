"""The variants proof: multi-draft, token trees, block verification and typical acceptance, exactly.

:func:`variants_document` computes every verifier of :mod:`specproof.laws.variants` on small worked
inputs (and, with ``real=True``, on SmolLM2's shipped rows), and writes each single-position
verifier's :class:`~specproof.laws.outcome.OutcomeTree` (rows, recipes, branches) into one JSON
document. :func:`verify_document` re-reads that JSON and believes nothing it did not recompute:
each row with a recipe is re-derived from the rows it names (:func:`rederive_rows`), each branch
from its primitive (:meth:`~specproof.laws.outcome.OutcomeTree.rederive`), the law from the leaves, and
each claim (law == p, acceptance, TV) is compared exactly. This re-verification is untrusted code
(the trusted checker's outcome-tree certificate kind is separate work); the transcript says so.

Run as ``python proofs/variants.py`` (writes ``proofs/transcripts/variants/variants.json`` and ``.md``).
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from specproof.certify import certificate
from specproof.errors import renamed
from specproof.laws.outcome import InvalidTree, OutcomeTree
from specproof.laws.variants import (
    block_verification_law,
    deterministic_tree_law,
    greedy_tree_law,
    multidraft_law,
    sibling_tree,
    spectr_rho,
    stochastic_tree_law,
    topk_tree,
    typical_block_law,
    typical_law,
    typical_tree,
)

__all__ = [
    "WORKED_P",
    "WORKED_Q",
    "rederive_rows",
    "variants_document",
    "verify_document",
    "render_variants_proof",
    "write_variants_proof",
]

#: The small worked pair of the table in docs/variants.md.
WORKED_P = (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4))
WORKED_Q = (Fraction(1, 4), Fraction(1, 4), Fraction(1, 2))

#: Sun et al. 2024's binary example (Section 3): M_b = (1/3, 2/3), M_s = (2/3, 1/3).
PAPER_MB = (Fraction(1, 3), Fraction(2, 3))
PAPER_MS = (Fraction(2, 3), Fraction(1, 3))

#: A deterministic tree whose root's first two children share token 1.
SHARED_TREE = [[1, [[0, []]]], [1, [[2, []]]], [2, []]]


def _nd(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _row_nd(row) -> list[str]:
    return [_nd(x) for x in row]


def _parse(x: str) -> Fraction:
    num, _, den = x.partition("/")
    return Fraction(int(num), int(den or 1))


def rederive_rows(tree: OutcomeTree) -> list[str]:
    """Re-derive every row that has a recipe from the rows it names; return the rows taken as given.

    Recipes (:class:`~specproof.laws.outcome.OutcomeTree`): ``input`` (the certificate's inputs,
    compared with the document's), ``given``, ``copy``, ``positive-part``, ``floor-difference``,
    ``normalized``, ``without``, ``one-hot-argmax``, ``uniform``, ``times-capped-ratio``, ``scaled``, ``minimum``.

    Raises
    ------
    InvalidTree
        A row differs from its recipe, or names an unknown recipe or row.
    """
    given = []
    for name, recipe in sorted(tree.recipes.items()):
        kind, args = recipe[0], recipe[1:]
        row = tree.rows[name]
        v = len(row)

        def src(n, name=name):
            if n not in tree.rows:
                raise InvalidTree(f"row {name!r}: its recipe names row {n!r}, which the tree does not list")
            return tree.rows[n]

        if kind in ("input", "given"):
            given.append(name)
            continue
        if kind == "copy":
            want = src(args[0])
        elif kind == "positive-part":
            want = tuple(max(a - b, Fraction(0)) for a, b in zip(src(args[0]), src(args[1])))
        elif kind == "floor-difference":
            eps = _parse(args[2])
            want = tuple(max(a - b, eps) for a, b in zip(src(args[0]), src(args[1])))
        elif kind == "normalized":
            a = src(args[0])
            total = sum(a, Fraction(0))
            if total <= 0:
                raise InvalidTree(f"row {name!r}: normalizes {args[0]!r}, which has mass {total}")
            want = tuple(x / total for x in a)
        elif kind == "without":
            drop = set(args[1])
            want = tuple(Fraction(0) if i in drop else x for i, x in enumerate(src(args[0])))
        elif kind == "one-hot-argmax":
            a = src(args[0])
            top = max(range(len(a)), key=lambda i: (a[i], -i))
            want = tuple(Fraction(int(i == top)) for i in range(len(a)))
        elif kind == "uniform":
            want = tuple(Fraction(1, v) for _ in range(v))
        elif kind == "scaled":
            want = tuple(x * _parse(args[1]) for x in src(args[0]))
        elif kind == "minimum":
            want = tuple(min(a, b) for a, b in zip(src(args[0]), src(args[1])))
        elif kind == "times-capped-ratio":
            a, b = src(args[1]), src(args[2])
            scale = min(Fraction(1), a[args[3]] / b[args[3]])
            want = tuple(c * scale for c in src(args[0]))
        else:
            raise InvalidTree(f"row {name!r} has unknown recipe {kind!r}")
        if tuple(want) != tuple(row):
            raise InvalidTree(f"row {name!r} differs from its recipe {list(recipe)!r}")
    return given


def _position_case(name: str, verifier: str, params: dict, tree: OutcomeTree, p, q, accepted_at=None) -> dict[str, Any]:
    law, _ = tree.law()
    tv = sum((abs(a - b) for a, b in zip(law, p)), Fraction(0)) / 2
    case = {
        "name": name,
        "verifier": verifier,
        "params": params,
        "p": _row_nd(p),
        "q": _row_nd(q),
        "law": _row_nd(law),
        "acceptance": _nd(tree.accept_probability()),
        "tv": _nd(tv),
        "lossless": tv == 0,
        "tree": tree.as_dict(),
    }
    if accepted_at is not None:
        case["accepted_at"] = [_nd(x) for x in accepted_at]
    return case


def _worked_positions(p, q, prefix: str, ks=(1, 2, 3, 4)) -> list[dict[str, Any]]:
    cases = []
    for method in ("with-replacement", "without-replacement", "spectr"):
        for k in ks:
            law = multidraft_law(p, q, k, method=method)
            params = {"k": k}
            if method == "spectr":
                params["rho"] = _nd(spectr_rho(p, q, k))
            cases.append(
                _position_case(
                    f"{prefix}-{method}-k{k}", f"multidraft/{method}", params, law.tree, p, q, law.accepted_at
                )
            )
    for k in ks:
        tokens = [t for t, _ in topk_tree(q, [k])]
        cases.append(
            _position_case(
                f"{prefix}-topk-siblings-k{k}",
                "tree/siblings-one-hot",
                {"k": k, "children": tokens},
                sibling_tree(p, tokens),
                p,
                q,
            )
        )
    cases.append(
        _position_case(f"{prefix}-typical", "typical", {"eps": "9/100", "delta": "3/10"}, typical_tree(p, q), p, q)
    )
    return cases


def _block_case(name: str, target, draft, gamma: int) -> dict[str, Any]:
    law = block_verification_law(target, draft, gamma)
    return {
        "name": name,
        "gamma": gamma,
        "token_expected_accepted": _nd(law.token_expected_accepted),
        "block_expected_accepted": _nd(law.expected_accepted),
        "upper_bound": _nd(law.upper_bound),
        "accepted_length": [_nd(x) for x in law.accepted_length_law],
        "stream_tv": _nd(law.stream_tv),
        "lossless": law.lossless,
    }


def _tree_case(name: str, kind: str, law, params: dict) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "params": params,
        "depth": law.depth,
        "accepted_length": [_nd(x) for x in law.accepted_length_law],
        "expected_emitted": _nd(law.expected_emitted),
        "lossless": law.lossless,
        "emitted": {",".join(map(str, s)): _nd(m) for s, m in sorted(law.emitted.items())},
        "positions": {",".join(map(str, s)): t.as_dict() for s, t in sorted(law.positions.items())},
    }


def _real_cases(max_pairs: int, max_k: int = 4) -> list[dict[str, Any]]:
    """SmolLM2's rows at one position: exact acceptance per verifier and k, typical TV; the expected
    emitted tokens at depth 1..3 when the same rows serve every position (``1 + a + ... + a^d``)."""
    from specproof.laws.chain import expected_tokens
    from specproof.models.fixtures import smollm2_pairs

    out = []
    for rp in list(smollm2_pairs())[:max_pairs]:
        p, q = rp.p.fractions(), rp.q.fractions()
        row: dict[str, Any] = {"name": rp.name, "draft": rp.draft, "context": rp.context}
        acc: dict[str, list[Fraction]] = {}
        acc["with-replacement"] = [multidraft_law(p, q, k).acceptance for k in range(1, max_k + 1)]
        acc["spectr"] = [multidraft_law(p, q, k, method="spectr").acceptance for k in range(1, max_k + 1)]
        tops = [t for t, _ in topk_tree(q, [max_k])]
        acc["topk-siblings"] = [sibling_tree(p, tops[:k]).accept_probability() for k in range(1, max_k + 1)]
        t = typical_law(p, q)
        acc["typical"] = [t.acceptance]
        row["acceptance"] = {m: [_nd(a) for a in v] for m, v in acc.items()}
        row["expected_emitted_same_rows"] = {
            m: [[_nd(expected_tokens(a, d)) for d in (1, 2, 3)] for a in v] for m, v in acc.items()
        }
        row["typical_tv"] = _nd(t.tv)
        out.append(row)
    return out


def variants_document(*, real: bool = False, real_pairs: int = 3) -> dict[str, Any]:
    """Every variant's exact law on the worked inputs, as one JSON-ready document.

    Parameters
    ----------
    real : bool, optional
        Also compute acceptance on SmolLM2's shipped rows (slow: about a minute per pair at
        V = 49,152).
    real_pairs : int, optional
        How many SmolLM2 pairs (in fixture order).

    Returns
    -------
    dict
        ``{"schema": "specproof.variants-proof/1", "statement", "positions": [...],
        "blocks": [...], "trees": [...], "typical_blocks": [...], "real": [...]}``; every
        position case carries its outcome tree (``tree``) and claims.
    """
    p, q = WORKED_P, WORKED_Q
    positions = _worked_positions(p, q, "worked")
    blocks = [_block_case("paper-example", PAPER_MB, PAPER_MS, 2)]
    blocks += [_block_case(f"worked-gamma{g}", p, q, g) for g in (1, 2, 3)]
    trees = [
        _tree_case("shared-siblings", "deterministic", deterministic_tree_law(p, SHARED_TREE), {"tree": SHARED_TREE}),
        _tree_case(
            "topk-2x2",
            "deterministic",
            deterministic_tree_law(p, topk_tree(q, [2, 2])),
            {"tree": "topk_tree(q, [2, 2])"},
        ),
        _tree_case(
            "zero-draft-child",
            "deterministic",
            deterministic_tree_law(p, topk_tree(["1/2", "1/2", "0"], [3])),
            {"tree": "topk_tree((1/2, 1/2, 0), [3])"},
        ),
        _tree_case("stochastic-2x2", "stochastic", stochastic_tree_law(p, q, [2, 2]), {"branching": [2, 2]}),
        _tree_case(
            "stochastic-2x2-without",
            "stochastic",
            stochastic_tree_law(p, q, [2, 2], method="without-replacement"),
            {"branching": [2, 2], "method": "without-replacement"},
        ),
        _tree_case("greedy-shared-siblings", "greedy", greedy_tree_law(p, SHARED_TREE), {"tree": SHARED_TREE}),
    ]
    typical_blocks = []
    for g in (1, 2, 3):
        law = typical_block_law(p, q, g)
        typical_blocks.append(
            {
                "gamma": g,
                "expected_emitted": _nd(law.expected_emitted),
                "stream_tv": _nd(law.stream_tv),
                "node_tv": {",".join(map(str, s)): _nd(v) for s, v in sorted(law.node_tv.items())},
            }
        )
    return {
        "schema": "specproof.variants-proof/1",
        "statement": "On the worked pair p = (1/2, 1/4, 1/4), q = (1/4, 1/4, 1/2): recursive rejection sampling "
        "with and without replacement, SpecTr's k-sequential selection and one-hot sibling "
        "verification emit exactly p at one position (k = 1..4); deterministic, top-k and "
        "stochastic token trees are lossless at every reachable node; block verification is "
        "lossless with E[accepted] between token verification and the full-information bound; "
        "typical acceptance's exact law and TV are as stated.",
        "worked_pair": {"p": _row_nd(p), "q": _row_nd(q)},
        "positions": positions,
        "blocks": blocks,
        "trees": trees,
        "typical_blocks": typical_blocks,
        "real": _real_cases(real_pairs) if real else [],
        "trust": "Every single position and every token-tree node is also an outcome certificate, "
        "re-verified by the trusted checker (the theorem variants_positions: "
        "proofs/transcripts/variants_positions.md). The figures here (tree and block laws, E[emitted]) are re-verified by "
        "specproof.certify.variants_proof.verify_document (untrusted): rows from recipes, branches from "
        "primitives, laws from leaves. Rows with recipe 'given' (the typical-acceptance mask) are "
        "taken as stated.",
    }


def verify_document(doc: dict[str, Any]) -> tuple[bool, list[str]]:
    """Re-verify a :func:`variants_document` read back from JSON.

    Returns
    -------
    (bool, list of str)
        Whether every claim holds, and one line per failure (empty when proved).
    """
    problems: list[str] = []
    for case in doc["positions"]:
        name = case["name"]
        try:
            tree = OutcomeTree.from_dict(case["tree"])
            rederive_rows(tree)
            tree.rederive()
        except InvalidTree as exc:
            problems.append(f"{name}: {exc}")
            continue
        law, bad = tree.law()
        p = tuple(_parse(x) for x in case["p"])
        if bad:
            problems.append(f"{name}: out-of-range outputs {bad}")
        if tuple(_row_nd(law)) != tuple(case["law"]):
            problems.append(f"{name}: the leaves give law {_row_nd(law)}, the document claims {case['law']}")
        if _nd(tree.accept_probability()) != case["acceptance"]:
            problems.append(f"{name}: acceptance {tree.accept_probability()} != claimed {case['acceptance']}")
        tv = sum((abs(a - b) for a, b in zip(law, p)), Fraction(0)) / 2
        if _nd(tv) != case["tv"] or (tv == 0) != case["lossless"]:
            problems.append(f"{name}: TV {tv} != claimed {case['tv']} / lossless {case['lossless']}")
        if case["verifier"] != "typical" and tv != 0:
            problems.append(f"{name}: a lossless verifier emits a law other than p (TV {tv})")
    for t in doc["trees"]:
        for key, data in t["positions"].items():
            try:
                tree = OutcomeTree.from_dict(data)
                rederive_rows(tree)
                tree.rederive()
            except InvalidTree as exc:
                problems.append(f"tree {t['name']} node [{key}]: {exc}")
        if not t["lossless"]:
            problems.append(f"tree {t['name']}: not lossless")
    for b in doc["blocks"]:
        tok, blk, ub = (_parse(b[k]) for k in ("token_expected_accepted", "block_expected_accepted", "upper_bound"))
        if not (b["lossless"] and tok <= blk <= ub):
            problems.append(
                f"block {b['name']}: lossless {b['lossless']}, token {tok} <= block {blk} <= bound {ub} fails"
            )
    return not problems, problems


def render_variants_proof(doc: dict[str, Any], proved: bool, problems: list[str]) -> str:
    """The Markdown transcript of a variants document (from the JSON, never by hand)."""
    lines = [
        "# Proof transcript: verifier variants",
        "",
        doc["statement"],
        "",
        f"**Verdict: {'PROVED' if proved else 'NOT PROVED'}** ({doc['trust']})",
        "",
    ]
    lines += [
        "## One position, worked pair",
        "",
        f"p = ({', '.join(doc['worked_pair']['p'])}), q = ({', '.join(doc['worked_pair']['q'])})",
        "",
        "| case | verifier | params | acceptance | P(draft i accepted) | TV | lossless | branches |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in doc["positions"]:
        nb = sum(len(n["branches"]) for n in c["tree"]["nodes"])
        params = ", ".join(f"{k}={v}" for k, v in c["params"].items())
        lines.append(
            f"| {c['name']} | {c['verifier']} | {params} | {c['acceptance']} | "
            f"{', '.join(c.get('accepted_at', [])) or '-'} | {c['tv']} | {c['lossless']} | {nb} |"
        )
    lines += [
        "",
        "## Block verification (Sun et al. 2024, Algorithm 2)",
        "",
        "| case | gamma | token verification E[accepted] | block verification E[accepted] | full-information bound | stream TV |",
        "|---|---|---|---|---|---|",
    ]
    for b in doc["blocks"]:
        lines.append(
            f"| {b['name']} | {b['gamma']} | {b['token_expected_accepted']} | {b['block_expected_accepted']} | "
            f"{b['upper_bound']} | {b['stream_tv']} |"
        )
    lines += [
        "",
        "## Token trees",
        "",
        "| tree | kind | depth | P(accepted = 0..depth) | E[emitted] | lossless | nodes |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in doc["trees"]:
        lines.append(
            f"| {t['name']} | {t['kind']} | {t['depth']} | {', '.join(t['accepted_length'])} | "
            f"{t['expected_emitted']} | {t['lossless']} | {len(t['positions'])} |"
        )
    lines += [
        "",
        "## Typical acceptance over a block (eps = 9/100, delta = 3/10)",
        "",
        "| gamma | E[emitted] | stream TV | TV at the first position |",
        "|---|---|---|---|",
    ]
    for t in doc["typical_blocks"]:
        lines.append(f"| {t['gamma']} | {t['expected_emitted']} | {t['stream_tv']} | {t['node_tv']['']} |")
    if doc["real"]:
        lines += [
            "",
            "## SmolLM2 rows (one position; depth d with the same rows at every position)",
            "",
            "| pair | verifier | acceptance, k = 1..4 | E[emitted] at d = 1, 2, 3 (k = 1 .. 4) |",
            "|---|---|---|---|",
        ]

        def f(x):
            return f"{float(_parse(x)):.4f}"

        for r in doc["real"]:
            for m, v in r["acceptance"].items():
                ee = "; ".join(", ".join(map(f, e)) for e in r["expected_emitted_same_rows"][m])
                lines.append(f"| {r['name']} | {m} | {', '.join(map(f, v))} | {ee} |")
            lines.append(f"| {r['name']} | typical TV | {f(r['typical_tv'])} | |")
        lines += ["", "(Exact values in the JSON; decimals here are rounded for reading.)"]
    if problems:
        lines += ["", "## Failures", ""] + [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n"


def position_certificates() -> dict[str, Any]:
    """Every single-position verifier of the worked pair, and every node of the worked token
    trees, as outcome certificates (:func:`specproof.certify.certificate.build_outcome_certificate`) in
    one bundle, which the trusted checker re-verifies: rows from their recipes, branches from
    their primitives, the law, acceptance and TV from the leaves. Rows no recipe makes (the
    typical-acceptance mask) are ``given`` and reported as trusted."""
    p, q = WORKED_P, WORKED_Q
    certs = []

    def add(name, tree, statement, greedy=False):
        reference = "p"
        if greedy:  # greedy verification emits the argmax of p: that is its reference law
            reference = "argmax-p"
            tree = OutcomeTree(
                {
                    **tree.rows,
                    reference: tuple(
                        Fraction(int(i == max(range(len(p)), key=lambda j: (tree.rows["p"][j], -j))))
                        for i in range(len(tree.rows["p"]))
                    ),
                },
                tree.root,
                tree.vocab_size,
                tree.derivations,
                {**tree.recipes, reference: ("one-hot-argmax", "p")},
            )
        certs.append(
            certificate.build_outcome_certificate(
                tree,
                name=name,
                statement=statement,
                reference=reference,
                provenance={"source": "specproof.certify.variants_proof"},
            )
        )

    for case_name, tree in _worked_trees(p, q):
        add(case_name, tree, f"{case_name}: one verification position on the worked pair; lossless iff TV = 0.")
    for tree_name, law in (
        ("shared-siblings", deterministic_tree_law(p, SHARED_TREE)),
        ("topk-2x2", deterministic_tree_law(p, topk_tree(q, [2, 2]))),
        ("stochastic-2x2", stochastic_tree_law(p, q, [2, 2])),
        ("greedy-shared-siblings", greedy_tree_law(p, SHARED_TREE)),
    ):
        for path, tree in sorted(law.positions.items()):
            where = ",".join(map(str, path)) or "root"
            add(
                f"{tree_name} node [{where}]",
                tree,
                f"{tree_name}, the node after the accepted path [{where}]: the child or bonus token emitted there.",
                greedy=tree_name.startswith("greedy"),
            )
    return certificate.build_bundle(
        certs,
        name="variants-positions",
        statement="Each single-position verifier variant on the worked pair p = (1/2, 1/4, 1/4), q = (1/4, 1/4, 1/2), "
        "and each node of the worked token trees, emits the law listed; lossless iff TV = 0 from p (the "
        "greedy tree's reference is the argmax of p).",
        provenance={"source": "specproof.certify.variants_proof.position_certificates"},
    )


def _worked_trees(p, q, ks=(1, 2, 3, 4)):
    """(name, outcome tree) of every single-position case of :func:`_worked_positions`."""
    for method in ("with-replacement", "without-replacement", "spectr"):
        for k in ks:
            yield f"worked-{method}-k{k}", multidraft_law(p, q, k, method=method).tree
    for k in ks:
        yield f"worked-topk-siblings-k{k}", sibling_tree(p, [t for t, _ in topk_tree(q, [k])])
    yield "worked-typical", typical_tree(p, q)


def write_variants_proof(out_dir: str | Path, *, real: bool = False) -> tuple[bool, Path, Path]:
    """Build, write ``variants.json`` (``variants_real.json`` with ``real``), re-read, re-verify and
    render ``.md`` beside it; without ``real``, also re-verify the outcome certificates of every
    single position with the trusted checker (written by the theorem ``variants_positions``,
    ``python proofs/variants_positions.py``). Return (proved, json_path, md_path)."""
    from specproof import checker

    out = Path(out_dir)
    key = "variants_real" if real else "variants"
    json_path = certificate.write(variants_document(real=real), out / f"{key}.json")
    doc = json.loads(json_path.read_text(encoding="utf-8"))  # verify only what is on disk
    proved, problems = verify_document(doc)
    if not real:  # the single positions: the theorem variants_positions (proofs/variants_positions.py)
        bundle = position_certificates()
        verdict = checker.check(certificate.dumps(bundle))
        if not verdict.valid:
            problems.append(f"variants_positions: the trusted checker rejected it ({verdict.detail})")
        else:
            for cert, facts in zip(bundle["certificates"], verdict.facts):
                if not cert["name"].startswith("worked-typical") and not facts["claims"]["lossless"]:
                    problems.append(f"{cert['name']}: the trusted checker finds it lossy")
        proved = proved and not problems
    md_path = out / f"{key}.md"
    md_path.write_text(render_variants_proof(doc, proved, problems), encoding="utf-8", newline="\n")
    return proved, json_path, md_path


# the old names, with a DeprecationWarning that says where they went (issue 34: one name, one meaning)
__getattr__ = renamed(
    __name__,
    {
        "render": ("render_variants_proof", "specproof.report.transcript.render renders certificates"),
        "run": ("write_variants_proof", "every subcommand module has its own run"),
    },
    globals(),
)
