"""The ``specproof`` command line. Thin: every computation lives in the library.

Commands: ``prove`` (every theorem on the embedded inputs, or one pair from files),
``check`` (re-verify a certificate with the trusted checker alone), ``transcript``
(render a certificate as Markdown), ``fixtures`` (list or rebuild the real-model pairs) and
``crosscheck`` (float path vs exact law).
Exit status: 0 proved / valid / within bound; 1 not proved / rejected / bound exceeded;
2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from pathlib import Path
from typing import Sequence

from tqdm import tqdm

from . import __version__, certificate, checker, theorems, transcript
from .crosscheck import crosscheck, crosscheck_blocks, crosscheck_real
from .errors import SpecProofError
from .loaders import load_distribution

log = logging.getLogger("specproof")

DEFAULT_OUT = "specproof-transcripts"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specproof",
        description="Exact laws and proofs for speculative-decoding verifiers.",
    )
    parser.add_argument("--version", action="version", version=f"specproof {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    pr = sub.add_parser(
        "prove",
        help="prove every theorem on the embedded inputs, or one pair from files",
        description="With no --target/--draft: run every proof ("
        + "; ".join(title for title, _ in theorems.THEOREMS.values())
        + "), write JSON certificates and Markdown transcripts into --out and print a summary. With --target and "
        "--draft: prove that pair (files: a .json list of 'n/d' strings or numbers, a .npy array, "
        "or a text file of one value per line; floats are made exact by the dyadic-renormalize "
        "policy, which the transcript records). Exit 0 iff everything is proved.",
    )
    pr.add_argument("--target", metavar="P", help="file with the target distribution p")
    pr.add_argument("--draft", metavar="Q", help="file with the draft distribution q")
    pr.add_argument("--out", metavar="DIR", default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    pr.add_argument("--name", default="pair", help="name of the certificate for --target/--draft (default 'pair')")
    pr.add_argument("--atol", type=float, default=None,
                    help="largest accepted |sum - 1| for float inputs before exact renormalization (default 1e-3)")

    ck = sub.add_parser("check", help="re-verify a certificate with the trusted checker alone",
                        description="Re-verify a certificate or bundle with the trusted checker alone "
                        "(a symbolic-proof record is re-checked by re-running the SymPy proof). "
                        "Exit 0 valid, 1 rejected (the reason is printed), 2 unreadable.")
    ck.add_argument("certificate", metavar="CERT.json")

    tr = sub.add_parser("transcript", help="render a certificate as a Markdown transcript",
                        description="Check the certificate, then print (or write) its transcript.")
    tr.add_argument("certificate", metavar="CERT.json")
    tr.add_argument("--out", metavar="FILE.md", help="write here instead of standard output")

    fx = sub.add_parser(
        "fixtures",
        help="show or rebuild the real-model fixtures shipped with specproof",
        description="List the real (p, q) pairs shipped with specproof. With --regenerate, query the "
        "real models again (needs the [models] extra) and rewrite the fixture files in --dir.",
    )
    fx.add_argument("--regenerate", action="store_true", help="query the models and rewrite the fixtures")
    fx.add_argument("--dir", metavar="DIR", default=None,
                    help="where to write regenerated fixtures (default: the installed package's fixtures)")

    cc = sub.add_parser(
        "crosscheck",
        help="check the float path against the exact law on random pairs, the real pairs, or drafted blocks",
        description="Run specproof.numeric against specproof.exact on random rational pairs "
        "(zeros in p and q, p == q, one-hot, disjoint supports, tiny differences, V = 1) and "
        "report the worst absolute error of dist and alpha; or, with --blocks, the batched "
        "given-block law (accepted drafts, and the token emitted at each stop position) on random "
        "drafted blocks built from the same kinds of pairs. Exit 1 if it exceeds the bound.",
    )
    cc.add_argument("--pairs", type=int, default=10000, help="number of pairs (default 10000)")
    cc.add_argument("--seed", type=int, default=0, help="random seed, >= 0 (default 0)")
    cc.add_argument("--bound", type=float, default=None, help="error bound (default 1e-12)")
    mode = cc.add_mutually_exclusive_group()
    mode.add_argument("--real", action="store_true",
                      help="check every real pair shipped with specproof instead of random pairs")
    mode.add_argument("--blocks", type=int, metavar="N",
                      help="check the batched given-block path (numeric.given_block_law) on N random drafted "
                           "blocks, gamma 1..5, in batches of 8, instead of single pairs")
    _add_audit_parser(sub)
    return parser


def _table(outcomes: list[theorems.Outcome]) -> str:
    head = ("theorem", "instances", "verdict", "transcript")
    rows = [(o.title, str(o.instances), "PROVED" if o.proved else "NOT PROVED", str(o.md_path)) for o in outcomes]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(head), line(tuple("-" * w for w in widths)), *map(line, rows)])


def _prove(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.target is None and args.draft is None:
        outcomes = []
        for i, key in enumerate(theorems.THEOREMS, 1):
            # one line per theorem as it finishes (the whole run takes about a minute and a half)
            print(f"[{i}/{len(theorems.THEOREMS)}] {theorems.THEOREMS[key][0]} ... ", end="", file=sys.stderr, flush=True)
            outcomes.append(theorems.prove(key, out))
            print("PROVED" if outcomes[-1].proved else "NOT PROVED", file=sys.stderr, flush=True)
        print(_table(outcomes))
        proved = all(o.proved for o in outcomes)
        print(f"{sum(o.proved for o in outcomes)} of {len(outcomes)} theorems proved")
        return 0 if proved else 1
    if args.target is None or args.draft is None:
        raise _Usage("--target and --draft go together")
    kwargs = {} if args.atol is None else {"atol": args.atol}
    p, p_info = load_distribution(args.target, "p", **kwargs)
    q, q_info = load_distribution(args.draft, "q", **kwargs)
    cert = certificate.build_certificate(p, q, name=args.name, provenance={"target": p_info, "draft": q_info})
    json_path = certificate.write(cert, out / f"{args.name}.json")
    loaded = json_path.read_text(encoding="utf-8")
    verdict = checker.check(loaded)
    md_path = out / f"{args.name}.md"
    md_path.write_text(transcript.render(json.loads(loaded), verdict, json_name=json_path.name),
                       encoding="utf-8", newline="\n")
    print(f"{args.name}: {'PROVED' if verdict.valid else 'NOT PROVED'} (V = {cert['vocab_size']}, "
          f"alpha = {transcript.show(cert['totals']['alpha'])}); {verdict.detail}")
    print(f"  {json_path}\n  {md_path}")
    return 0 if verdict.valid else 1


def _check(args: argparse.Namespace) -> int:
    doc = _load_json(args.certificate)
    if _is_record(doc):
        return _check_record(args.certificate, doc)
    verdict = checker.check_file(args.certificate)
    if verdict.valid:
        print(f"{args.certificate}: valid ({verdict.detail})")
        return 0
    print(f"{args.certificate}: REJECTED ({verdict.reason.value}): {verdict.detail}")
    return 2 if verdict.reason is checker.Reason.UNREADABLE else 1


def _fresh_symbolic() -> dict:
    from .symbolic_proof import prove_every_v

    return prove_every_v()


def _is_record(doc: object) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("schema"), str) and doc["schema"] in _RECORDS


#: Records that are not certificates: schema -> (what recomputes them, what it is called).
_RECORDS = {
    "specproof.symbolic-proof/1": (_fresh_symbolic, "the SymPy proof"),
}


def _check_record(path: str, doc: dict) -> int:
    """A record (the symbolic proof) is re-checked by recomputing it, not by the kernel."""
    fresh_fn, what = _RECORDS[doc["schema"]]
    fresh = fresh_fn()
    if fresh != doc:
        print(f"{path}: REJECTED (record): the record differs from a fresh run of {what}")
        return 1
    if not fresh["proved"]:
        print(f"{path}: REJECTED (record): {what} did not prove everything")
        return 1
    print(f"{path}: valid (re-ran {what}: it proves everything the record says)")
    return 0


# Rejections after which the certificate is still well formed enough to render.
_RENDERABLE = {checker.Reason.NEGATIVE, checker.Reason.NOT_NORMALIZED, checker.Reason.ACCEPT,
               checker.Reason.RESIDUAL, checker.Reason.EMITTED, checker.Reason.TOTAL, checker.Reason.CLAIM,
               checker.Reason.NODE_MASS}


def _transcript(args: argparse.Namespace) -> int:
    doc = _load_json(args.certificate)
    if _is_record(doc):
        if _check_record(args.certificate, doc) != 0:  # a record is re-checked, never trusted
            return 1
        verdict, ok = None, True
    else:
        verdict = checker.check_file(args.certificate)
        ok = verdict.valid
        if not ok and verdict.reason not in _RENDERABLE:
            print(f"{args.certificate}: cannot render ({verdict.reason.value}): {verdict.detail}", file=sys.stderr)
            return 2
    try:
        text = transcript.render(doc, verdict, json_name=Path(args.certificate).name)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        print(f"{args.certificate}: cannot render: the document lacks or garbles {exc!s:.200}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8", newline="\n")
    else:
        sys.stdout.write(text)
    return 0 if ok else 1


def _load_json(path: str) -> object:
    try:
        data = Path(path).read_bytes()  # json detects UTF-8 (with or without BOM), UTF-16, UTF-32
        return json.loads(data[3:] if data.startswith(b"\xef\xbb\xbf") else data)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None


def _crosscheck(args: argparse.Namespace) -> int:
    if args.blocks is None and args.pairs < 1:
        raise _Usage(f"--pairs must be >= 1, got {args.pairs}")
    if args.seed < 0:
        raise _Usage(f"--seed must be >= 0, got {args.seed}")
    if args.bound is not None and not (math.isfinite(args.bound) and args.bound >= 0):
        raise _Usage(f"--bound must be a finite number >= 0, got {args.bound}")
    kwargs = {} if args.bound is None else {"bound": args.bound}
    if args.blocks is not None:
        if args.blocks < 1:
            raise _Usage(f"--blocks must be >= 1, got {args.blocks}")
        with tqdm(total=args.blocks, unit="block", file=sys.stderr, disable=None) as bar:
            report = crosscheck_blocks(args.blocks, args.seed, progress=lambda done: bar.update(done - bar.n),
                                       **kwargs)
        print(report.summary())
        return 0 if report.passed else 1
    if args.real:
        with tqdm(unit="pair", file=sys.stderr, disable=None) as bar:
            report = crosscheck_real(progress=lambda _: bar.update(1), **kwargs)
        print(report.summary())
        return 0 if report.passed else 1
    with tqdm(total=args.pairs, unit="pair", file=sys.stderr, disable=None) as bar:
        report = crosscheck(args.pairs, args.seed, progress=lambda _: bar.update(1), **kwargs)
    print(report.summary())
    return 0 if report.passed else 1


def _fixtures(args: argparse.Namespace) -> int:
    from . import fixtures

    if args.regenerate:
        out = Path(args.dir) if args.dir else fixtures.fixture_path("")
        for path in fixtures.regenerate(out):
            print(f"wrote {path}")
        return 0
    for rp in fixtures.real_pairs():
        print(f"{rp.name}: V = {len(rp.p)}; context {rp.context!r}; draft: {rp.draft}")
    return 0


class _Usage(Exception):
    """A usage error found after parsing (exit 2)."""


# --------------------------------------------------------------------------- audit (issue 11)


def _add_audit_parser(sub: argparse._SubParsersAction) -> None:
    au = sub.add_parser(
        "audit",
        help="the exact law of a verifier rule (coin model, comparison, residual, ...) on one pair",
        description="Compute the exact emitted law of the verifier under a rule (a name from --list, or a "
        "JSON file of rule fields) on the pair --target/--draft, or with --real on the real pairs shipped "
        "with specproof. With --gamma G the same rows serve every position of a block of G drafts. Exit 0 if "
        "the emitted law equals the target's (lossless on this input), 1 if not, 2 for usage or bad input.",
    )
    au.add_argument("--target", metavar="P", help="file with the target distribution p (as for prove)")
    au.add_argument("--draft", metavar="Q", help="file with the draft distribution q")
    au.add_argument("--proposal", metavar="R",
                    help="file with the law the draft token is really drawn from, when it is not the q of the "
                         "ratio (a bf16 or processed q)")
    au.add_argument("--policy", metavar="NAME|FILE.json", default="standard",
                    help="the rule: a name from --list (default standard) or a JSON file of Rule fields")
    au.add_argument("--gamma", type=int, metavar="G", help="a block of G drafts, the same rows at every position")
    au.add_argument("--stop-token", type=int, action="append", default=[], metavar="T",
                    help="a stop token id (repeatable); with --gamma the block ends at the first one")
    au.add_argument("--drafted", type=int, nargs="+", metavar="T",
                    help="a given drafted block (ids, padding sentinels -1 at the end): the accepted-length law, "
                         "pass probabilities and flag count for these drafts, the same rows at every position")
    au.add_argument("--search", action="store_true",
                    help="also search the minimal counterexample (exhaustive V <= 4, denominators <= 8, then "
                         "1000 random pairs)")
    au.add_argument("--json", action="store_true", help="print one JSON object (rationals as 'n/d' strings)")
    au.add_argument("--list", action="store_true", help="list the named rules with their description and source")
    au.add_argument("--real", choices=["phone", "smollm2", "all"],
                    help="audit the real pairs shipped with specproof instead of --target/--draft "
                         "(phone: 20 pairs, V = 41, under a second; smollm2: 18 pairs, V = 49,152, about 10-25 s each)")


def _audit_rule(text: str):
    from .policy import NAMED_RULES, rule_from_dict, named_rule

    if text.endswith(".json") and text not in NAMED_RULES:
        try:
            with open(text, encoding="utf-8") as fh:
                data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise _Usage(f"--policy {text}: not valid JSON ({exc.msg})") from None
        return text, rule_from_dict(data)
    return text, named_rule(text)


def _audit_position(p, q, rule, proposal=None) -> dict:
    from .audit import position_law
    from .rational import format_fraction as ff

    law = position_law(p, q, rule, proposal=proposal)
    return {
        "verdict": "lossless" if law.lossless else "lossy",
        "tv": ff(law.tv),
        "alpha": ff(law.alpha),
        "textbook_alpha": ff(law.textbook_alpha),
        "law": [ff(x) for x in law.law],
        "reference": [ff(x) for x in law.reference],
        "differing": law.differing(),
        "out_of_range": {str(k): ff(v) for k, v in sorted(law.out_of_range.items())},
    }


def _audit_report(name: str, out: dict) -> str:
    from fractions import Fraction

    def show(text: str) -> str:
        x = Fraction(text)
        return text if len(text) <= 100 else f"{float(x):.6g} (exact: {len(text)} characters; see --json)"

    lines = [f"rule {name}: {out['verdict'].upper()}", f"  TV from the target's law: {show(out['tv'])}",
             f"  alpha (P accepted under the rule): {show(out['alpha'])}; textbook sum min(p, q): {show(out['textbook_alpha'])}"]
    if out["differing"]:
        shown = ", ".join(map(str, out["differing"][:20])) + (" ..." if len(out["differing"]) > 20 else "")
        lines.append(f"  tokens whose emitted mass differs: {shown} ({len(out['differing'])} of {len(out['law'])})")
    if out["out_of_range"]:
        lines.append(f"  mass on ids outside [0, V): {out['out_of_range']}")
    if "gamma" in out:
        lines.append(f"  gamma {out['gamma']}: accepted-length law {out['accepted_length']}")
        lines.append(f"  E[accepted] {show(out['expected_accepted'])}; E[emitted] {show(out['expected_emitted'])}; "
                     f"E[emitted up to the first stop] {show(out['expected_emitted_to_stop'])}")
        if out.get("stream_tv") is not None:
            lines.append(f"  TV of the first gamma + 1 output tokens: {show(out['stream_tv'])}")
    if "drafted" in out:
        d = out["drafted"]
        lines.append(f"  drafted {d['tokens']}: {d['real_drafts']} verified; accepted-length law {d['accepted_length']}")
        lines.append(f"  E[accepted prefix] {d['expected_accepted']}; E[sum of pass flags] {d['expected_flags']}; "
                     f"counted by the rule {d['expected_counted']}")
    if "search" in out:
        srch = out["search"]
        if srch["smallest"] is None:
            lines.append(f"  search: no lossy pair among {srch['pairs']}")
        else:
            for key in ("smallest", "largest"):
                c = srch[key]
                lines.append(f"  search, {key}: p = [{', '.join(c['p'])}], q = [{', '.join(c['q'])}], TV {c['tv']}")
    return "\n".join(lines)


def _audit(args: argparse.Namespace) -> int:
    from .policy import NAMED_RULES

    if args.list:
        if args.json:
            print(json.dumps([{"name": r.name, "description": r.description, "source": r.source}
                              for r in NAMED_RULES.values()], indent=2))
        else:
            width = max(len(n) for n in NAMED_RULES)
            for r in NAMED_RULES.values():
                print(f"{r.name.ljust(width)}  {r.description}\n{'':{width}}  source: {r.source}")
        return 0
    name, rule = _audit_rule(args.policy)
    if args.real:
        return _audit_real(args, name, rule)
    if args.target is None or args.draft is None:
        raise _Usage("give --target and --draft (or --real, or --list)")
    p, _ = load_distribution(args.target, "p")
    q, _ = load_distribution(args.draft, "q")
    proposal = None if args.proposal is None else load_distribution(args.proposal, "proposal")[0]
    out = {"rule": name, "rule_fields": rule.as_dict(), **_audit_position(p, q, rule, proposal)}
    if args.gamma is not None:
        from .audit import block_law
        from .rational import format_fraction as ff

        block = block_law(p, q, args.gamma, rule, stop_tokens=args.stop_token, proposal=proposal)
        out.update({
            "verdict": "lossless" if block.lossless and out["verdict"] == "lossless" else "lossy",
            "gamma": args.gamma,
            "accepted_length": [ff(x) for x in block.accepted_length],
            "expected_accepted": ff(block.expected_accepted),
            "expected_counted": ff(block.expected_counted),
            "acceptance_rate": ff(block.acceptance_rate),
            "expected_emitted": ff(block.expected_emitted),
            "expected_emitted_to_stop": ff(block.expected_emitted_to_stop),
            "stream_tv": None if block.stream_tv is None else ff(block.stream_tv),
            "stop_tokens": args.stop_token,
        })
    if args.drafted is not None:
        from .audit import given_block_law
        from .rational import format_fraction as ff

        n = len(args.drafted)
        given = given_block_law([p] * (n + 1), [q] * n, args.drafted, rule)
        out["drafted"] = {
            "tokens": args.drafted,
            "real_drafts": given.real_drafts,
            "pass_probabilities": [ff(x) for x in given.pass_probabilities],
            "accepted_length": [ff(x) for x in given.accepted_length],
            "expected_accepted": ff(given.expected_accepted),
            "expected_flags": ff(given.expected_flags),
            "expected_counted": ff(given.expected_counted),
        }
    if args.search:
        from .audit import search_counterexample
        from .rational import format_fraction as ff

        with tqdm(unit="pair", file=sys.stderr, disable=None, desc="search V <= 4, d <= 8, then 1000 random") as bar:
            found = search_counterexample(rule, random_pairs=1000, progress=bar.update)
        pack = lambda c: None if c is None else {  # noqa: E731
            "p": [ff(x) for x in c.p], "q": [ff(x) for x in c.q], "tv": ff(c.tv)}
        out["search"] = {"smallest": pack(found.smallest), "largest": pack(found.largest), "pairs": found.pairs}
    print(json.dumps(out, indent=2, sort_keys=True) if args.json else _audit_report(name, out))
    return 0 if out["verdict"] == "lossless" else 1


def _audit_real(args: argparse.Namespace, name: str, rule) -> int:
    from . import fixtures

    sources = {"phone": [fixtures.phone_lm_pairs], "smollm2": [fixtures.smollm2_pairs],
               "all": [fixtures.phone_lm_pairs, fixtures.smollm2_pairs]}[args.real]
    results = []
    for source in sources:
        for rp in tqdm(list(source()), unit="pair", file=sys.stderr, disable=None, desc=name):
            results.append({"pair": rp.name, "rule": name, **_audit_position(rp.p, rp.q, rule)})
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        for r in results:
            print(_audit_report(name, r).replace(f"rule {name}:", f"{r['pair']}, rule {name}:", 1))
    return 0 if all(r["verdict"] == "lossless" for r in results) else 1


_COMMANDS = {"prove": _prove, "check": _check, "transcript": _transcript, "fixtures": _fixtures,
             "crosscheck": _crosscheck, "audit": _audit}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 rejected, 2 usage/bad input)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return _COMMANDS[args.command](args)
    except _Usage as exc:
        print(f"specproof {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (SpecProofError, OSError) as exc:  # bad input, or a file that cannot be read or written
        print(f"specproof {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # e.g. numbers beyond Python's int/str conversion limit
        print(f"specproof {args.command}: error: {exc!s:.300}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
