"""``specproof audit``: the exact law of a rule, a variant or a real pair, and its certificate."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from specproof.certify import certificate
from specproof.cli._common import _bar, _print_json, _Usage
from specproof.cli.loaders import Distributions, load_distribution, load_distributions

# --------------------------------------------------------------------------- audit (issue 11)


def add_parser(sub: argparse._SubParsersAction) -> None:
    au = sub.add_parser(
        "audit",
        help="the exact law of a verifier rule (coin model, comparison, residual, ...) on one pair",
        description="Compute the exact emitted law of the verifier under a rule (a name from --list, or a "
        "JSON file of rule fields) on the pair --target/--draft, or with --real on the real pairs shipped "
        "with specproof. With --gamma G the same rows serve every position of a block of G drafts. Verdict: "
        "lossless (the emitted law equals the reference), float-faithful (a float rule whose law equals a float-ideal "
        "verifier's exactly, one position: the TV is its float floor, as `trace` of the same code says) or lossy. "
        "Exit 0 if lossless or float-faithful (with --strict only if lossless), 1 if lossy, 2 for usage or bad input.",
    )
    au.add_argument(
        "rule", nargs="?", metavar="RULE", help="the rule, as --policy RULE (a name from --list or a JSON file)"
    )
    au.add_argument("--target", metavar="P", help="file with the target distribution p (as for prove)")
    au.add_argument("--draft", metavar="Q", help="file with the draft distribution q")
    au.add_argument(
        "--proposal",
        metavar="R",
        help="file with the law the draft token is really drawn from, when it is not the q of the "
        "ratio (a bf16 or processed q)",
    )
    au.add_argument(
        "--logits",
        choices=["torch", "numpy"],
        metavar="LIBRARY",
        help="--target, --draft (and --proposal) hold logits, one row [V] (.json, -inf allowed, or .npy): "
        "the rule's processing runs on them as engines do, then LIBRARY's softmax (torch or numpy), "
        "evaluated as data; needs a rule with a float32 or float64 arithmetic",
    )
    au.add_argument(
        "--policy",
        metavar="NAME|FILE.json",
        default="standard",
        help="the rule: a name from --list (default standard) or a JSON file of Rule fields",
    )
    au.add_argument("--gamma", type=int, metavar="G", help="a block of G drafts, the same rows at every position")
    au.add_argument(
        "--stop-token",
        type=int,
        action="append",
        default=[],
        metavar="T",
        help="a stop token id (repeatable); with --gamma the block ends at the first one",
    )
    au.add_argument(
        "--drafted",
        type=int,
        nargs="+",
        metavar="T",
        help="a given drafted block (ids, padding sentinels -1 at the end): the accepted-length law, "
        "pass probabilities and flag count for these drafts, the same rows at every position",
    )
    au.add_argument(
        "--search",
        action="store_true",
        help="also search the minimal counterexample (exhaustive V <= 4, denominators <= 8, then 1000 random pairs)",
    )
    au.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (rationals as 'n/d' strings, each with KEY_decimal, its nearest float, beside it; --real: {rule, real, verdict, pairs: [one per pair]})",
    )
    au.add_argument(
        "--certificate",
        metavar="FILE.json",
        help="write the position's outcome tree as a certificate that `specproof check` re-verifies "
        "(with --real: a bundle, one per pair; --verifier block: the block certificate); the "
        "block figures of --gamma/--drafted are not in it (see --block-certificate)",
    )
    au.add_argument(
        "--block-certificate",
        metavar="FILE.json",
        help="with --gamma: write the whole step over a block of G drafts (the chain under the rule, "
        "typical acceptance, or block verification) as a block certificate that `specproof check` "
        "re-verifies: its law, accepted-length law, expected emitted tokens and stream TV from the "
        "target's joint law (no stop tokens or --proposal)",
    )
    au.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 unless lossless (a float-faithful rule, whose TV is its float floor, exits 0 without it)",
    )
    au.add_argument("--list", action="store_true", help="list the named rules with their description and source")
    au.add_argument(
        "--verifier",
        choices=["chain", "block", "multidraft", "tree", "typical"],
        default="chain",
        help="the verifier (default chain, under --policy); the others are the textbook variants of "
        "specproof.laws.variants (--gamma: block length or tree depth)",
    )
    au.add_argument(
        "--drafts",
        type=int,
        default=2,
        metavar="K",
        help="multidraft: drafts per position; tree without --tree: q's top-K children per node",
    )
    au.add_argument(
        "--method",
        choices=["with-replacement", "without-replacement", "spectr"],
        default="with-replacement",
        help="multidraft: how the K drafts are drawn and verified",
    )
    au.add_argument("--tree", metavar="FILE.json", help="tree: a token tree [[token, [children...]], ...]")
    au.add_argument(
        "--real",
        choices=["phone", "smollm2", "all"],
        help="audit the real pairs shipped with specproof instead of --target/--draft "
        "(phone: 20 pairs, V = 41, under a second; smollm2: 18 pairs, V = 49,152, about 10-25 s each)",
    )


def _audit_rule(text: str):
    from specproof.rules.policy import NAMED_RULES, named_rule, rule_from_dict

    if text.endswith(".json") and text not in NAMED_RULES:
        try:
            with open(text, encoding="utf-8") as fh:
                data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise _Usage(f"--policy {text}: not valid JSON ({exc.msg})") from None
        return text, rule_from_dict(data)
    return text, named_rule(text)


def _audit_position(p, q, rule, proposal=None) -> dict:
    from specproof.laws.rational import format_fraction as ff
    from specproof.rules.audit import position_law

    law = position_law(p, q, rule, proposal=proposal)
    floor = _float_floor(law, rule)
    return {
        "verdict": "lossless" if law.lossless else floor["verdict"] if floor else "lossy",
        **({"float_floor": floor} if floor else {}),
        "tv": ff(law.tv),
        "alpha": ff(law.alpha),
        "textbook_alpha": ff(law.textbook_alpha),
        "law": [ff(x) for x in law.law],
        "reference": [ff(x) for x in law.reference],
        "reference_is": (
            "the target's law p"
            if rule.reference.identity
            else "the argmax of p (greedy)"
            if rule.acceptance == "greedy"
            else "p after the rule's processing (logit bias, temperature, top-k, top-p, min-p)"
        ),
        "differing": law.differing(),
        "out_of_range": {str(k): ff(v) for k, v in sorted(law.out_of_range.items())},
        "arithmetic": _arithmetic_note(rule, len(law.law), getattr(p, "library", None)),
    }


#: Largest V at which `audit` judges a lossy float rule against the float-ideal family (len(FAMILY) x V
#: threshold roundings); past it the output says the float floor was not judged.
FLOAT_FLOOR_MAX_V = 1024


def _float_floor(law, rule) -> dict | None:
    """The three-way verdict `trace` gives the same code: a float rule whose exact law differs from the
    target's is ``float-faithful`` when it equals a float-ideal verifier's law exactly (the TV is that
    member's float floor), else ``lossy``. None where not judged: an exact rule or a lossless law, or a
    reference other than the target rows' own law (the rule processes p: no float member computes it)."""
    from fractions import Fraction

    from specproof.laws.rational import format_fraction as ff
    from specproof.rules.faithful import judge

    if law.lossless or rule.arithmetic.is_exact or not rule.reference.identity:
        return None
    target, draft = law.tree.rows["target"], law.tree.rows["draft"]
    total = sum(target, Fraction(0))
    if total == 0:
        return None
    rows_law = tuple(x / total for x in target)
    rounding = sum((abs(a - b) for a, b in zip(rows_law, law.reference)), Fraction(0)) / 2
    if len(target) > FLOAT_FLOOR_MAX_V:
        return {
            "verdict": "lossy",
            "judged": False,
            "why": f"not judged at V = {len(target)} > {FLOAT_FLOOR_MAX_V}: LOSSY means the law differs from the "
            "reference, by any amount; trace the code for the three-way verdict",
        }
    j = judge(dict(enumerate(law.law)), target, draft, count_equivalents=False)
    # judged against the rows the rule computes on: "lossless" there (the law is the exact verifier's on
    # p and q rounded to the rule's format) is float-faithful here, the rows' rounding being the whole TV
    verdict = "float-faithful" if j.verdict == "lossless" else j.verdict
    out: dict[str, Any] = {
        "verdict": verdict,
        "judged": True,
        "tv_from_float_ideal": ff(j.tv_from_float_ideal),
        "nearest": j.arithmetic,
    }
    if j.verdict == "lossless":
        why = (
            f"equals the exact verifier's law on the rows rounded to {rule.arithmetic.dtype} (`trace` of the same "
            "code on those rows says LOSSLESS): the TV from p is their rounding alone, the float floor "
            "(--strict exits 1)"
        )
    elif j.verdict == "float-faithful":
        why = (
            f"equals the float-ideal verifier with {j.arithmetic} exactly: the TV is its float floor, "
            "as `trace` of the same code says (--strict exits 1)"
        )
    elif j.outside_support and j.tv_from_float_ideal == 0:
        why = (
            f"equals {j.arithmetic} exactly, but that arithmetic emits tokens the target gives probability "
            f"0 (mass {float(j.outside_support):.6g}): always a fault, not a float floor"
        )
    else:
        why = (
            f"no float-ideal verifier has this law; TV from the nearest, {j.arithmetic}: "
            f"{float(j.tv_from_float_ideal):.6g} ({ff(j.tv_from_float_ideal)}): a fault, not the float floor"
        )
    if rounding:
        out["rows_rounding_tv"] = ff(rounding)
        why += (
            f"; judged on the rows rounded to {rule.arithmetic.dtype} (what the code computes on), whose own "
            f"law is at TV {float(rounding):.6g} from p's, "
            + (
                "part of the TV above"
                if rounding <= law.tv
                else "more than the TV above (the arithmetic's own error offsets part of it)"
            )
        )
    out["why"] = why
    return out


def _exit(verdict: str, strict: bool) -> int:
    """0 for lossless, and for float-faithful unless --strict; 1 otherwise."""
    return 0 if verdict == "lossless" or (verdict == "float-faithful" and not strict) else 1


def _degenerate_rows(args: argparse.Namespace) -> list[str]:
    """The degenerate rows (NaN, +/-inf, all zero) among the audit's inputs, each named with why."""
    found = []
    for path, what in ((args.target, "p"), (args.draft, "q"), (args.proposal, "proposal")):
        if path is None:
            continue
        dist = load_distributions(path, what, keep_degenerate=True)
        found += [
            f"{what}{f'[{i}]' if dist.batched else ''} ({Path(path).name}): {why}"
            for i, why in enumerate(dist.degenerate)
            if why is not None
        ]
    return found


def _report_degenerate(args: argparse.Namespace, name: str, rule, found: list[str]) -> int:
    """A degenerate input is a finding, not an error: it has no valid law, so no rule's output can be right on
    it. What the rule emits there (one position) is reported where its float arithmetic determines it
    (:func:`specproof.rules.degenerate.degenerate_law`), and said not to be where it does not. Exit 1."""
    from specproof.laws.rational import format_fraction as ff
    from specproof.rules.degenerate import degenerate_law

    rows = {}
    for path, what in ((args.target, "p"), (args.draft, "q"), (args.proposal, "proposal")):
        if path is not None:
            dist = load_distributions(path, what, keep_degenerate=True)
            rows[what] = None if dist.batched else _first_row(dist)
    if any(r is None for r in rows.values()):
        out, notes = None, ["stacked [N, V] rows: what the rule emits is reported for one row pair only"]
    else:
        out = degenerate_law(rows["p"], rows["q"], rule, proposal=rows.get("proposal"))
        notes = list(out.notes)
    shown = out if out is not None and out.modelled else None  # what the rule emits, where it is modelled
    note = (
        "a degenerate row has no valid law: every output a verifier emits on it is a fault, and a correct verifier "
        "refuses it; trace the code (specproof trace python MODULE:FUNCTION --target P --draft Q) to see what it "
        "emits, as for vLLM #53029's all-NaN row"
    )
    modelled = shown is not None
    if args.json:
        _print_json(
            {
                "command": "audit",
                "rule": name,
                "verdict": "degenerate",
                "degenerate": found,
                "modelled": modelled,
                "law": {str(i): ff(m) for i, m in shown.law.items()} if shown is not None else None,
                "raised": ff(shown.raised) if shown is not None else None,
                "undetermined": ff(shown.undetermined) if shown is not None else None,
                "outside_support": ff(shown.outside_support) if shown is not None else None,
                "tv": None if shown is None or shown.tv is None else ff(shown.tv),
                "notes": notes,
                "note": note,
            }
        )
        return 1
    from specproof.report.transcript import number_text as show  # decimals first, the exact value after

    print(f"rule {name}: DEGENERATE INPUT (no valid law; not lossless)")
    for d in found:
        print(f"  degenerate row {d}")
    if shown is None:
        print("  what the rule emits on it: not modelled")
    else:
        where = (
            f" ({rule.arithmetic.dtype} arithmetic, IEEE NaN and infinities)" if not rule.arithmetic.is_exact else ""
        )
        print(f"  what the rule emits at one position{where}:")
        for i, m in list(shown.law.items())[:20]:
            print(f"    id {i}: {show(m)}")
        if len(shown.law) > 20:
            print(f"    ... ({len(shown.law)} ids; see --json)")
        if not shown.law:
            print("    no token")
        if shown.raised:
            print(f"  the code raises instead: {show(shown.raised)}")
        if shown.undetermined:
            print(f"  not determined by the rule: {show(shown.undetermined)}")
        if shown.law:
            print(f"  emitted outside the target's support: {show(shown.outside_support)}")
        if shown.tv is not None:
            print(f"  TV from the target's law (a raise emits nothing): {show(shown.tv)}")
    for n in notes:
        print(f"  - {n}")
    print(f"  {note}")
    return 1


def _first_row(dist: Distributions) -> Any:
    """The first row of a file as :func:`~specproof.rules.degenerate.degenerate_law` takes it: its floats as read,
    or the exact row."""
    if dist.floats is not None:
        return dist.floats[0]
    exact = dist.vectors[0]
    assert exact is not None  # an exact file: only a float row can be degenerate
    return exact.fractions()


def _arithmetic_note(rule, vocab_size: int, logits: str | None = None) -> str:
    """What the audit modelled of the code's arithmetic, and what it did not (``logits``: the library whose
    softmax turned the given logits into rows)."""
    arith = rule.arithmetic
    if arith.is_exact:
        text = "exact rational arithmetic (the ratio p/q and the residual are not rounded)"
    else:
        text = (
            f"{arith.describe(rule.comparison)}; rows rounded to {arith.dtype}; each operation modelled as IEEE "
            "round-to-nearest-even of its exact result"
        )
        procs = [rule.target_processing, rule.draft_processing, rule.proposal_processing]
        if logits is not None:
            from specproof.rules import libm

            text += (
                f"; the rows are {libm.library_provenance(logits)}'s softmax in {arith.dtype} of the logits after the "
                "rule's processing (bias and temperature IEEE-rounded, top-k, top-p and min-p masked to -inf by "
                "exact comparisons; Processing.apply_logits), the softmax and cumsum evaluated as data, not modelled"
            )
        elif any(pr is not None and not pr.identity for pr in procs):
            from specproof.rules import libm

            own = arith.library is not None and libm.available(arith.library)
            total = f"{arith.library}'s own sum, evaluated as data" if own else "the float sum"
            text += (
                f"; processing steps masked by float comparisons and renormalized by {total} after each "
                "step (Processing.apply_float)"
            )
            if not own and vocab_size >= 5:
                text += (
                    f" (summed left to right; at V = {vocab_size} PyTorch and NumPy sum in blocks: name the "
                    "code's library in the arithmetic to use its own sum)"
                )
    text += f"; coin {rule.coin.name}"
    return "; ".join([text, *arith.caveats(vocab_size, rule.coin)])


def _audit_certificate(p, q, name: str, rule, proposal=None, provenance=None, label: str = "") -> dict:
    """The outcome certificate of one audited position (see
    :func:`specproof.certify.certificate.build_outcome_certificate`)."""
    from specproof.rules.audit import position_law

    tree = position_law(p, q, rule, proposal=proposal).tree  # the tree the audit reports
    what = f"{label}: " if label else ""
    statement = (
        f"{what}Under the verifier rule {name!r} ({rule.describe()}), the token emitted at one position "
        "has the law listed, its acceptance probability is alpha and its exact TV from the reference "
        "(the target's law) is TV; lossless iff TV = 0."
    )
    arith = rule.arithmetic  # the checker re-derives the tree, not a library's results
    if arith.test in ("log", "exp"):
        statement += (
            f" The accept thresholds are constants computed from {arith.library}'s own log and exp "
            "on the machine that wrote this certificate (library results, not modelled); the checker "
            "takes them as given."
        )
    elif arith.python_coin:
        statement += (
            " The accept thresholds are constants: the grid points below which a Python-float coin "
            "rounded to float32 passes (NEP 50); the checker takes them as given."
        )
    if arith.library is not None and arith.normalization == "divide":
        statement += (
            f" The residual is divided by {arith.library}'s own sum of it on the machine that wrote this "
            "certificate; where that differs from the left-to-right sum, the checker takes it as given and "
            "checks that it is a float, at least the largest entry, within the error bound of a sum in any order."
        )
    from specproof.rules import libm

    used = (
        {"library": libm.library_provenance(arith.library)} if arith.library and libm.available(arith.library) else {}
    )
    return certificate.build_outcome_certificate(
        tree,
        name=f"{label or 'audit'}, rule {name}",
        statement=statement,
        provenance={"rule": name, "rule_fields": rule.as_dict(), **used, **(provenance or {})},
    )


def _audit_report(name: str, out: dict) -> str:
    from fractions import Fraction

    from specproof.report.transcript import number_text

    def show(text: str) -> str:  # decimals first, the exact value after (long ones by length and digest)
        return number_text(Fraction(text))

    def short(texts) -> str:  # a row of exact values, 0 and 1 as integers
        return "[" + ", ".join(str(Fraction(t)) for t in texts) + "]"

    lines = [
        f"rule {name}: {out['verdict'].upper()}",
        f"  TV from the reference law ({out.get('reference_is', 'the target law p')}): {show(out['tv'])}",
        f"  alpha (P accepted under the rule): {show(out['alpha'])}; textbook sum min(p, q): {show(out['textbook_alpha'])}",
    ]
    if "arithmetic" in out:
        lines.append(f"  arithmetic modelled: {out['arithmetic']}")
    if "float_floor" in out:
        lines.append(f"  float floor: {out['float_floor']['why']}")
    if out["differing"]:
        shown = ", ".join(map(str, out["differing"][:20])) + (" ..." if len(out["differing"]) > 20 else "")
        lines.append(f"  tokens whose emitted mass differs: {shown} ({len(out['differing'])} of {len(out['law'])})")
    if out["out_of_range"]:
        lines.append(f"  mass on ids outside [0, V): {out['out_of_range']}")
    if "gamma" in out:
        lines.append(f"  gamma {out['gamma']}: accepted-length law {short(out['accepted_length'])}")
        lines.append(
            f"  E[accepted] {show(out['expected_accepted'])}; E[emitted] {show(out['expected_emitted'])}; "
            f"E[emitted up to the first stop] {show(out['expected_emitted_to_stop'])}"
        )
        if out.get("stream_tv") is not None:
            lines.append(f"  TV of the first gamma + 1 output tokens: {show(out['stream_tv'])}")
    if "drafted" in out:
        d = out["drafted"]
        lines.append(
            f"  drafted {d['tokens']}: {d['real_drafts']} verified; accepted-length law {short(d['accepted_length'])}"
        )
        lines.append(
            f"  E[accepted prefix] {show(d['expected_accepted'])}; E[sum of pass flags] {show(d['expected_flags'])}; "
            f"counted by the rule {show(d['expected_counted'])}"
        )
    if "search" in out:
        srch = out["search"]
        if srch["smallest"] is None:
            lines.append(f"  search: no lossy pair among {srch['pairs']}")
        else:
            for key in ("smallest", "largest"):
                c = srch[key]
                lines.append(f"  search, {key}: p = {short(c['p'])}, q = {short(c['q'])}, TV {show(c['tv'])}")
    for key in ("certificate", "block_certificate"):
        if key in out:
            lines.append(f"  {key.replace('_', ' ')} written: {out[key]}")
    return "\n".join(lines)


def _write_checked(document: dict[str, Any], path: str) -> Path:
    """Write a certificate audit built, after the trusted checker accepted it: one the checker would
    reject (its numbers past a limit the checker holds, e.g. a mass over more than MAX_MASS_BITS bits) is
    not written, and the run stops with the checker's reason (exit 2)."""
    from specproof import checker

    verdict = checker.check(document)
    if not verdict.valid:
        reason = verdict.reason.value if verdict.reason is not None else "unknown"
        raise _Usage(
            f"{path}: not written: the trusted checker would reject this certificate ({reason}: {verdict.detail}); "
            "run without the certificate option for the audit alone"
        )
    return certificate.write(document, path)


def run(args: argparse.Namespace) -> int:
    from specproof.rules.policy import NAMED_RULES

    if args.list:
        if args.json:
            print(
                json.dumps(
                    [{"name": r.name, "description": r.description, "source": r.source} for r in NAMED_RULES.values()],
                    indent=2,
                )
            )
        else:
            width = max(len(n) for n in NAMED_RULES)
            for r in NAMED_RULES.values():
                print(f"{r.name.ljust(width)}  {r.description}\n{'':{width}}  source: {r.source}")
        return 0
    if args.rule is not None:
        if args.policy != "standard":
            raise _Usage(f"give the rule once: RULE ({args.rule}) or --policy ({args.policy})")
        args.policy = args.rule
    name, rule = _audit_rule(args.policy)
    if args.real:
        return _audit_real(args, name, rule)
    if args.target is None or args.draft is None:
        raise _Usage("give --target and --draft (or --real, or --list)")
    if args.logits is not None:
        p, q, proposal = (
            None if path is None else _load_logits(path, what, args.logits)
            for path, what in ((args.target, "--target"), (args.draft, "--draft"), (args.proposal, "--proposal"))
        )
        if args.verifier != "chain" or args.certificate or args.block_certificate:
            raise _Usage(
                "--logits applies to the chain verifier under --policy, without certificates (the softmax "
                "rows are library results the checker cannot re-derive)"
            )
    else:
        found = _degenerate_rows(args)
        if found:
            return _report_degenerate(args, name, rule, found)
        p, _ = load_distribution(args.target, "p")
        q, _ = load_distribution(args.draft, "q")
        proposal = None if args.proposal is None else load_distribution(args.proposal, "proposal")[0]
    if args.block_certificate and args.gamma is None:
        raise _Usage("--block-certificate needs --gamma (the block's drafts)")
    _audit_size_guard(args, p, q)
    if args.verifier != "chain":
        if args.stop_token or args.policy != "standard" or args.proposal is not None or args.drafted is not None:
            raise _Usage(
                f"--stop-token, --policy, --proposal and --drafted apply to the chain verifier; "
                f"--verifier {args.verifier} is the textbook variant"
            )
        return _audit_variant(args, p, q)
    out = {"rule": name, "rule_fields": rule.as_dict(), **_audit_position(p, q, rule, proposal)}
    if args.certificate:
        doc = _audit_certificate(p, q, name, rule, proposal, {"target": args.target, "draft": args.draft})
        out["certificate"] = str(_write_checked(doc, args.certificate))
    if args.gamma is not None:
        from specproof.laws.rational import format_fraction as ff
        from specproof.rules.audit import block_law

        block = block_law(p, q, args.gamma, rule, stop_tokens=args.stop_token, proposal=proposal)
        out.update(
            {
                "verdict": "lossless" if block.lossless and out["verdict"] == "lossless" else "lossy",
                **(
                    {
                        "float_floor": {
                            "verdict": "lossy",
                            "judged": False,
                            "why": "not judged for a block (one position "
                            "only): LOSSY means the block's law differs from the reference, by any amount",
                        }
                    }
                    if not block.lossless and "float_floor" in out
                    else {}
                ),
                "gamma": args.gamma,
                "accepted_length": [ff(x) for x in block.accepted_length_law],
                "expected_accepted": ff(block.expected_accepted),
                "expected_counted": ff(block.expected_counted),
                "acceptance_rate": ff(block.acceptance_rate),
                "expected_emitted": ff(block.expected_emitted),
                "expected_emitted_to_stop": ff(block.expected_emitted_to_stop),
                "stream_tv": None if block.stream_tv is None else ff(block.stream_tv),
                "stop_tokens": args.stop_token,
            }
        )
        if args.block_certificate:
            doc = _rule_block_certificate(p, q, name, rule, args, block, proposal)
            out["block_certificate"] = str(_write_checked(doc, args.block_certificate))
    if args.drafted is not None:
        from specproof.laws.rational import format_fraction as ff
        from specproof.rules.audit import given_block_law

        n = len(args.drafted)
        given = given_block_law([p] * (n + 1), [q] * n, args.drafted, rule)
        out["drafted"] = {
            "tokens": args.drafted,
            "real_drafts": given.real_drafts,
            "pass_probabilities": [ff(x) for x in given.pass_probabilities],
            "accepted_length": [ff(x) for x in given.accepted_length_law],
            "expected_accepted": ff(given.expected_accepted),
            "expected_flags": ff(given.expected_flags),
            "expected_counted": ff(given.expected_counted),
        }
    if args.search:
        from specproof.laws.rational import format_fraction as ff
        from specproof.rules.audit import search_counterexample

        with _bar(unit="pair", desc="search V <= 4, d <= 8, then 1000 random") as bar:
            searched = search_counterexample(rule, random_pairs=1000, progress=bar.update)

        def pack(c: Any) -> dict[str, Any] | None:
            return None if c is None else {"p": [ff(x) for x in c.p], "q": [ff(x) for x in c.q], "tv": ff(c.tv)}

        out["search"] = {
            "smallest": pack(searched.smallest),
            "largest": pack(searched.largest),
            "pairs": searched.pairs,
        }
    _print_json(out, indent=2) if args.json else print(_audit_report(name, out))
    return _exit(out["verdict"], args.strict)


#: Largest number of drafted prefixes (D^gamma, D = the draft's support) `audit --gamma` enumerates,
#: and of branches (D^gamma * V) a block certificate may hold; the Python API has no such limit.
AUDIT_MAX_PREFIXES = 20_000
AUDIT_MAX_CERTIFIED = 20_000


def _capped_power(base: int, exponent: int, cap: int) -> int:
    """``base ** exponent``, or ``cap + 1`` as soon as it exceeds ``cap`` (never a huge integer)."""
    out = 1
    for _ in range(exponent):
        out *= base
        if out > cap:
            return cap + 1
        if base <= 1:
            return out
    return out


def _load_logits(path: str, what: str, library: str):
    """One row of logits from ``path``, as a :class:`~specproof.rules.policy.Logits` of ``library``."""
    from specproof.rules.policy import Logits
    from specproof.trace.adapters.transformers import read_logits

    arr = read_logits(path, what, one_row=True)
    if arr.shape[0] != 1:
        raise _Usage(
            f"{what} {path}: {arr.shape[0]} rows of logits; --logits takes one row [V] (the same at every position)"
        )
    return Logits(arr[0], library=library)


def _audit_size_guard(args: argparse.Namespace, p, q) -> None:
    """Refuse, before any work, a --gamma whose blocks are too many to enumerate here, and stop
    tokens outside [0, V)."""
    v = len(p)
    bad = [t for t in args.stop_token or () if not 0 <= t < v]
    if bad:
        raise _Usage(f"--stop-token {bad[0]} is not a token id in [0, {v})")
    if args.gamma is None or args.gamma < 1 or (args.verifier == "tree" and args.tree):
        return  # a tree given as a file has the size of the file
    support = len(q) if not hasattr(q, "fractions") else sum(1 for x in q.fractions() if x)  # logits: every id
    if args.verifier == "tree":  # q's top-K children per node, gamma levels: K + K^2 + ... + K^gamma nodes
        k = min(args.drafts, support)
        nodes = sum(_capped_power(k, d, AUDIT_MAX_PREFIXES) for d in range(1, min(args.gamma, AUDIT_MAX_PREFIXES) + 1))
        if nodes > AUDIT_MAX_PREFIXES:
            raise _Usage(
                f"--verifier tree --gamma {args.gamma} --drafts {args.drafts}: the token tree has more than "
                f"{AUDIT_MAX_PREFIXES} nodes; use a smaller depth or fewer children, or give the tree with --tree"
            )
        return
    prefixes = _capped_power(support, args.gamma, AUDIT_MAX_PREFIXES)
    if prefixes > AUDIT_MAX_PREFIXES:
        raise _Usage(
            f"--gamma {args.gamma} with {support} draftable tokens enumerates up to {support}^{args.gamma} "
            f"drafted blocks, above {AUDIT_MAX_PREFIXES}: use a smaller gamma, or the Python API "
            "(specproof.rules.audit.block_law, specproof.laws.variants) with a budget of your own"
        )
    if args.block_certificate and prefixes * v > AUDIT_MAX_CERTIFIED:
        raise _Usage(
            f"--block-certificate at gamma {args.gamma}: about {support}^{args.gamma} x V = {prefixes * v} "
            f"branches, above {AUDIT_MAX_CERTIFIED} (the certificate would take minutes and many MB)"
        )


def _rule_block_certificate(p, q, name: str, rule, args: argparse.Namespace, block, proposal) -> dict:
    """The block certificate of the chain under ``rule``: each accepted prefix's position tree
    (:func:`specproof.rules.audit.position_tree`), composed by :func:`specproof.laws.outcome.block_tree`."""
    from specproof.laws.outcome import InvalidTree, block_tree
    from specproof.rules.audit import position_tree

    if args.stop_token or proposal is not None:
        raise _Usage("--block-certificate: stop tokens and --proposal are not in block certificates yet")
    first = position_tree(p, q, rule)
    if first.recipes.get("reference") != ("copy", "p"):
        raise _Usage(
            f"--block-certificate: the rule {name!r} processes the target (its reference is not p: greedy or processed rows); a "
            "block certificate states the stream against p itself"
        )
    if block.stream_tv is None:
        raise _Usage("--block-certificate: V**(gamma + 1) is above the enumeration limit of the stream TV")
    # the bonus token is drawn from the row the code samples from: p itself, or p rounded to the rule's float format
    bonus_row = "p" if first.recipes.get("target") == ("copy", "p") else "target"
    try:
        tree = block_tree(
            lambda prefix: position_tree(p, q, rule, unchecked=len(prefix) < rule.unchecked_drafts),
            args.gamma,
            bonus_row=bonus_row,
        )
    except InvalidTree as exc:
        raise _Usage(f"--block-certificate: {exc}") from None
    return certificate.build_block_certificate(
        tree,
        gamma=args.gamma,
        stream_tv=block.stream_tv,
        name=f"chain under {name}, gamma = {args.gamma}",
        provenance={"rule": name, "target": args.target, "draft": args.draft},
        statement=f"Under the verifier rule {name!r} ({rule.describe()}), one step over {args.gamma} drafts on "
        f"--target's and --draft's rows after every prefix: the emitted block, continued by sampling the "
        f"target, is at the stated exact TV from the target's joint law over gamma + 1 tokens (lossless iff 0).",
    )


def _audit_variant(args: argparse.Namespace, p, q) -> int:
    from specproof.laws.summary import audit_summary, format_summary

    tree = None
    if args.tree is not None:
        try:
            with open(args.tree, encoding="utf-8") as fh:
                tree = json.load(fh)
        except (OSError, json.JSONDecodeError) as exc:
            raise _Usage(f"--tree {args.tree}: {exc}") from None
    out = audit_summary(p, q, args.verifier, drafts=args.drafts, method=args.method, tree=tree, gamma=args.gamma)
    if args.certificate:
        out["certificate"] = str(_write_checked(_variant_certificate(p, q, args, out), args.certificate))
    if args.block_certificate:
        from specproof.certify import blocks

        provenance = {"verifier": args.verifier, "target": args.target, "draft": args.draft}
        if args.verifier == "block":
            doc = blocks.block_verification_certificate(p, q, args.gamma, provenance=provenance)
        elif args.verifier == "typical":
            doc = blocks.typical_block_certificate(p, q, args.gamma, provenance=provenance)
        else:
            raise _Usage(
                f"--block-certificate: the {args.verifier} verifier has no block certificate (its "
                "positions are certified by --certificate)"
            )
        out["block_certificate"] = str(_write_checked(doc, args.block_certificate))
    _print_json(out, indent=2) if args.json else print(format_summary(out))
    return 0 if out["verdict"] == "lossless" else 1


def _variant_certificate(p, q, args: argparse.Namespace, out: dict) -> dict:
    """The certificate of a variant: an outcome certificate of its position (multidraft,
    typical), a bundle of one per node of a token tree, or a block certificate (block
    verification over --gamma drafts, the same rows after every prefix)."""
    from specproof.certify import blocks
    from specproof.laws import variants

    provenance = {"verifier": args.verifier, "target": args.target, "draft": args.draft}
    statement = (
        f"The {args.verifier} verifier at one position on --target/--draft emits the law listed; lossless iff TV = 0."
    )
    if args.verifier == "multidraft":
        tree = variants.multidraft_law(p, q, args.drafts, method=args.method).tree
    elif args.verifier == "typical":
        tree = variants.typical_law(p, q).tree
    elif args.verifier == "tree":
        law = variants.deterministic_tree_law(p, out["tree"])
        certs = [
            certificate.build_outcome_certificate(
                t,
                name=f"tree node [{','.join(map(str, path)) or 'root'}]",
                reference="p",
                provenance=provenance,
                statement=f"The token tree's node after the accepted path {list(path)} emits the law listed.",
            )
            for path, t in sorted(law.positions.items())
        ]
        return certificate.build_bundle(
            certs, name="token tree", statement="Each node of the token tree emits its law.", provenance=provenance
        )
    else:
        return blocks.block_verification_certificate(
            p,
            q,
            out["gamma"],
            provenance=provenance,
            statement=f"Block verification (Sun et al. 2024, Algorithm 2) over {out['gamma']} drafts, --target's and "
            f"--draft's rows after every prefix: the emitted block, continued by sampling the target, has "
            f"the target's joint law over gamma + 1 tokens (lossless iff the stream TV is 0).",
        )
    return certificate.build_outcome_certificate(
        tree, name=f"{args.verifier} verifier", statement=statement, reference="p", provenance=provenance
    )


def _audit_real(args: argparse.Namespace, name: str, rule) -> int:
    from specproof.models import fixtures

    sources = {
        "phone": [fixtures.phone_lm_pairs],
        "smollm2": [fixtures.smollm2_pairs],
        "all": [fixtures.phone_lm_pairs, fixtures.smollm2_pairs],
    }[args.real]
    results, certs = [], []
    for source in sources:
        for rp in _bar(iterable=list(source()), unit="pair", desc=name):
            results.append({"pair": rp.name, "rule": name, **_audit_position(rp.p, rp.q, rule)})
            if args.certificate:
                certs.append(
                    _audit_certificate(
                        rp.p, rp.q, name, rule, label=rp.name, provenance={"pair": rp.name, **dict(rp.provenance)}
                    )
                )
    if args.certificate:
        _write_checked(
            certificate.build_bundle(
                certs,
                name=f"real pairs, rule {name}",
                statement=f"Each position's law under the verifier rule {name!r}.",
            ),
            args.certificate,
        )
    verdicts = {r["verdict"] for r in results}
    verdict = "lossy" if "lossy" in verdicts else "float-faithful" if "float-faithful" in verdicts else "lossless"
    if args.json:
        _print_json({"rule": name, "real": args.real, "verdict": verdict, "pairs": results}, indent=2)
    else:
        for r in results:
            print(_audit_report(name, r).replace(f"rule {name}:", f"{r['pair']}, rule {name}:", 1))
    return _exit(verdict, args.strict)
