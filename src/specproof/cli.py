"""The ``specproof`` command line. Thin: every computation lives in the library.

Commands: ``prove`` (every theorem on the embedded inputs, or one pair from files),
``check`` (re-verify a certificate with the trusted checker alone), ``transcript``
(render a certificate as Markdown), ``fixtures`` (list or rebuild the real-model pairs) and
``crosscheck`` (float path vs exact law).
Exit status: 0 proved / valid / within bound; 1 not proved / rejected / bound exceeded;
2 usage error or unreadable input; 141 when standard output is a pipe its reader closed.
``--json`` (prove, check, crosscheck) prints one JSON object on standard output instead of text;
progress bars (tqdm) go to standard error when it is a terminal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import sys
import threading
import unicodedata
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

from tqdm import tqdm

from . import __version__, certificate, checker, theorems, transcript
from .crosscheck import crosscheck, crosscheck_blocks, crosscheck_real, crosscheck_variants
from .errors import SpecProofError
from .loaders import Distributions, load_distribution, load_distributions
from .rational import DEFAULT_FLOAT_ATOL, format_fraction

log = logging.getLogger("specproof")

DEFAULT_OUT = "specproof-transcripts"
#: Where ``fixtures --regenerate`` writes by default: a directory under the current one.
DEFAULT_FIXTURES_DIR = "specproof-fixtures"
#: ``prove --certificate auto`` writes a compact certificate for float inputs with V above this.
COMPACT_ABOVE = 1024
#: Exit status when the reader of standard output went away (as for a process killed by SIGPIPE).
EXIT_BROKEN_PIPE = 141


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
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
        "--draft: prove that pair (files: .json, .csv (one row or column), .npy, .safetensors, .pt, or text "
        "with one value per line; an [N, V] array gives N pairs in one bundle; a vector with any decimal "
        "number is a float vector, made exact by the dyadic-renormalize policy, which the transcript "
        "records). Exit 0 iff everything is proved.",
    )
    pr.add_argument("--target", metavar="P", help="file with the target distribution p (or an [N, V] stack)")
    pr.add_argument("--draft", metavar="Q", help="file with the draft distribution q (or an [N, V] stack)")
    pr.add_argument("--out", metavar="DIR", default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    pr.add_argument("--name", default="pair",
                    help="name of the certificate for --target/--draft, a plain file name without path "
                         "separators or '..' (default 'pair')")
    pr.add_argument("--atol", type=float, default=None,
                    help="largest accepted |sum - 1| of a float row before exact renormalization, in (0, 1) "
                         f"(default {DEFAULT_FLOAT_ATOL:g})")
    pr.add_argument("--certificate", choices=("auto", "full", "compact"), default="auto",
                    help="full: every token's row as exact 'n/d' text; compact: p and q as float64 bit patterns "
                         "and the rows that matter (float inputs only; much smaller and faster at large V); "
                         f"auto (default): compact for float inputs with V > {COMPACT_ABOVE}, else full")
    pr.add_argument("--jobs", type=int, default=None, metavar="N",
                    help="with no --target/--draft: prove the theorems in N worker processes (default: 2, or 1 "
                         "on a one-core machine; 1 runs everything in this process); the files written are the same")
    _json_option(pr)

    ck = sub.add_parser("check", help="re-verify a certificate with the trusted checker alone",
                        description="Re-verify a certificate or bundle with the trusted checker alone "
                        "(a symbolic-proof record is checked for shape, then by re-running the SymPy proof). "
                        "A valid outcome or block certificate's verdict (LOSSLESS or LOSSY) is printed with its "
                        "reference law. Exit 0 valid (with --require-lossless: valid and lossless), 1 rejected "
                        "(the reason is printed), 2 unreadable.")
    ck.add_argument("certificate", metavar="CERT.json")
    ck.add_argument("--target", metavar="P", help="also confirm that the certificate's p is exactly this file's "
                    "values made exact (the file formats of prove; a [N, V] file binds a bundle row by row); an "
                    "outcome or block certificate is compared on the input rows its tree reads, and the output "
                    "names the rows compared, those not read, and those read but bound to nothing")
    ck.add_argument("--draft", metavar="Q", help="the same for q (give --target and --draft together)")
    ck.add_argument("--atol", type=float, default=None,
                    help=f"tolerance on the float sums of --target/--draft, in (0, 1) (default {DEFAULT_FLOAT_ATOL})")
    ck.add_argument("--require-lossless", action="store_true",
                    help="exit 1 also for a valid certificate whose verifier is not lossless against its reference "
                         "(for CI: a valid certificate of a lossy verifier otherwise exits 0)")
    _json_option(ck)

    tr = sub.add_parser("transcript", help="render a certificate as a Markdown transcript",
                        description="Check the certificate, then print (or write) its transcript.")
    tr.add_argument("certificate", metavar="CERT.json")
    tr.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    tr.add_argument("--format", choices=("markdown", "latex"), default="markdown",
                    help="Markdown (default), or a standalone LaTeX document of the same transcript "
                         "(needs the 'report' extra: markdown-it-py)")
    tr.add_argument("--plots", action="store_true",
                    help="also draw each certificate's law as SVG beside --out (FILE-0.svg, ...) and link it "
                         "(needs the 'report' extra: matplotlib)")
    tr.add_argument("--log", action="store_true", help="with --plots: a log-scale probability axis")

    fx = sub.add_parser(
        "fixtures",
        help="show or rebuild the real-model fixtures shipped with specproof",
        description="List the real (p, q) pairs shipped with specproof. With --regenerate, query the "
        "real models again (needs the [models] extra) and rewrite the fixture files in --dir.",
    )
    fx.add_argument("--regenerate", action="store_true", help="query the models and rewrite the fixtures")
    fx.add_argument("--dir", metavar="DIR", default=DEFAULT_FIXTURES_DIR,
                    help=f"where to write regenerated fixtures (default ./{DEFAULT_FIXTURES_DIR}, created if "
                         "missing); never the installed package")

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
    mode.add_argument("--variants", type=int, metavar="N",
                      help="check the float mirrors of multi-draft verification (numeric.multidraft_law) and of "
                           "one-hot token-tree children (numeric.sibling_law) on N random pairs, k = 1..4")
    _json_option(cc)
    _add_audit_parser(sub)
    _add_trace_parser(sub)
    return parser


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is raised (so that ``--json`` can report it) instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise _ParseError(f"{self.prog}: error: {message}")


class _ParseError(Exception):
    """A usage error found by argparse (exit 2)."""


def _json_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true",
                     help="print exactly one JSON object on standard output instead of text (rationals as "
                          "'n/d' strings; progress and errors still go to standard error); exit status unchanged")


def _print_json(obj: dict[str, Any]) -> None:
    """One JSON object on standard output, with DEL, C1 and bidi controls escaped as well (JSON
    escapes only C0 itself), so that nothing in it is a terminal control."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False)
    print("".join(f"\\u{ord(c):04x}" if c in _BIDI or "\x7f" <= c <= "\x9f" or c in "\u2028\u2029" else c
                  for c in text))


def _bar(**kwargs: Any) -> tqdm:
    """A progress bar on standard error, shown only when it is a terminal."""
    return tqdm(file=sys.stderr, disable=None, leave=False, **kwargs)


def _table(outcomes: list[theorems.Outcome]) -> str:
    head = ("theorem", "instances", "verdict", "seconds", "transcript")
    rows = [(o.title, str(o.instances), "PROVED" if o.proved else "NOT PROVED", f"{o.seconds:.1f}", str(o.md_path))
            for o in outcomes]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(head), line(tuple("-" * w for w in widths)), *map(line, rows)])


#: Edge inputs of the transformers adapter whose float softmax is exact on every CPU (equal
#: logits and -inf), so the measured law does not depend on the machine.
_EXACT_EDGE_CASES = ("p == q (uniform rows)", "target never wants a drafted token (-inf)", "disjoint supports")


def _library_findings(inputs: Sequence[str] | None = None) -> dict[str, Any]:
    """Measured, not proved: the installed transformers' ``_speculative_sampling`` traced on the
    edge inputs whose softmax is exact (``inputs``, default :data:`_EXACT_EDGE_CASES`; about 2 s,
    most of it importing torch); skipped without torch and transformers."""
    try:
        import transformers

        from .adapters.transformers import block_law, edge_cases
    except ImportError as exc:
        return {"library": "transformers", "skipped": f"not installed ({exc.name}); the 'models' extra has it"}
    cases = edge_cases()
    rows = []
    for key in _EXACT_EDGE_CASES if inputs is None else inputs:
        law = block_law(*cases[key][:2])
        rows.append({"input": key, "verdict": "lossless" if law.lossless else "lossy", "tv": format_fraction(law.tv)})
    return {"library": "transformers", "version": transformers.__version__,
            "function": "transformers.generation.utils._speculative_sampling", "vocab_size": 4, "gamma": 2,
            "cases": rows}


def _findings_text(findings: dict[str, Any]) -> str:
    if "skipped" in findings:
        return f"Measured finding about {findings['library']}: skipped, {findings['skipped']}."
    lines = [f"Measured (traced by specproof.trace, not a theorem): {findings['library']} {findings['version']} "
             f"{findings['function']}, V = {findings['vocab_size']}, gamma = {findings['gamma']}; exact TV of the "
             "first gamma + 1 output tokens from the target's joint law:"]
    lines += [f"  {c['input']}: {c['verdict']}, TV {c['tv']}" for c in findings["cases"]]
    return "\n".join(lines)


_FINDINGS = "findings"  # the task name of the measured finding beside the theorems


def _jobs(jobs: int | None) -> int:
    if jobs is None:
        return min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if jobs < 1:
        raise _Usage(f"--jobs must be at least 1, got {jobs}")
    return jobs


def _prove_theorems(out: Path, jobs: int) -> tuple[list[theorems.Outcome], dict[str, Any]]:
    """Every theorem and the measured finding, in ``jobs`` processes (theorems.run_parallel); one
    progress line each on standard error as it finishes; the outcomes in :data:`theorems.THEOREMS`
    order."""
    tasks: dict[str, tuple[Callable[..., Any], tuple]] = {key: (theorems.prove, (key, out)) for key in theorems.THEOREMS}
    tasks[_FINDINGS] = (_timed_findings, (tuple(_EXACT_EDGE_CASES),))
    print(f"proving {len(theorems.THEOREMS)} theorems and measuring 1 finding in {min(jobs, len(tasks))} "
          f"process(es); one line each as it finishes:", file=sys.stderr, flush=True)
    done: dict[str, Any] = {}
    for i, (name, result) in enumerate(theorems.run_parallel(tasks, jobs), 1):
        done[name] = result
        if name == _FINDINGS:
            line = f"measured finding ({result[0].get('library')}) ... {result[1]:.1f} s"
        else:
            verdict = "PROVED" if result.proved else "NOT PROVED"
            line = f"{theorems.THEOREMS[name][0]} ... {verdict} in {result.seconds:.1f} s"
        print(f"[{i}/{len(tasks)}] {line}", file=sys.stderr, flush=True)
    return [done[key] for key in theorems.THEOREMS], done[_FINDINGS][0]


def _timed_findings(inputs: Sequence[str]) -> tuple[dict[str, Any], float]:
    import time

    start = time.perf_counter()
    findings = _library_findings(inputs)
    return findings, time.perf_counter() - start


def _prove(args: argparse.Namespace) -> int:
    out = Path(args.out)
    _check_atol(args.atol)
    if args.target is None and args.draft is None:
        outcomes, findings = _prove_theorems(out, _jobs(args.jobs))
        proved = all(o.proved for o in outcomes)
        if args.json:
            _print_json({"command": "prove", "proved": proved, "theorems": [
                {"theorem": o.theorem, "title": o.title, "instances": o.instances, "proved": o.proved,
                 "certificate": str(o.json_path), "transcript": str(o.md_path), "detail": o.detail,
                 "seconds": round(o.seconds, 3), **({"formal": o.formal} if o.formal else {})}
                for o in outcomes], "findings": findings})
        else:
            print(_table(outcomes))
            print(f"{sum(o.proved for o in outcomes)} of {len(outcomes)} theorems proved")
            for o in (o for o in outcomes if o.formal):  # the symbolic theorem's Coq check, or "not run"
                print(f"{o.title}: {o.formal}")
            print(_findings_text(findings))
        return 0 if proved else 1
    if args.target is None or args.draft is None:
        raise _Usage("--target and --draft go together")
    if args.jobs is not None:
        raise _Usage("--jobs applies to the embedded theorems (no --target/--draft)")
    _check_name(args.name)
    atol = DEFAULT_FLOAT_ATOL if args.atol is None else args.atol
    target = load_distributions(args.target, "p", atol=atol, atol_name="--atol")
    draft = load_distributions(args.draft, "q", atol=atol, atol_name="--atol")
    form = _form(args.certificate, target, draft)
    pairs = _pairs(target, draft, form)
    certs = []
    # one bar over the steps a person waits for at large V: build each, check each, render
    with _bar(total=2 * len(pairs) + 1, unit="step", desc="building") as bar:
        for i, (p, q) in enumerate(pairs):
            provenance = {"target": dict(target.provenance), "draft": dict(draft.provenance)}
            name = args.name
            if target.batched or draft.batched:
                name = f"{args.name}-{i}"
                for side, rows in (("target", target), ("draft", draft)):
                    if rows.batched:
                        provenance[side]["row"] = i if len(rows.vectors) > 1 else 0
            if form == "compact":
                certs.append(certificate.build_compact_certificate(p, q, name=name, atol=atol, provenance=provenance))
            else:
                certs.append(certificate.build_certificate(p, q, name=name, provenance=provenance))
            bar.update(1)
        doc = certs[0] if len(certs) == 1 and not (target.batched or draft.batched) else certificate.build_bundle(
            certs, name=args.name, statement=_BUNDLE_STATEMENT + certificate.STATEMENT,
            provenance={"target": target.provenance, "draft": draft.provenance})
        json_path = certificate.write(doc, out / f"{args.name}.json")
        written, verdict = _read_once(str(json_path))  # check and render what was written, read once
        bar.set_description("checking")
        verdict = verdict or _verify(written, bar)
        bar.set_description("transcript")
        md_path = out / f"{args.name}.md"
        md_path.write_text(transcript.render(written, verdict, json_name=json_path.name),
                           encoding="utf-8", newline="\n")
        bar.update(1)
    alphas = [Fraction(*transcript._parts(c["totals"]["alpha"])) for c in certs]
    if args.json:
        _print_json({
            "command": "prove", "name": args.name, "proved": verdict.valid, "vocab_size": certs[0]["vocab_size"],
            "pairs": len(certs), "form": form, "certificate": str(json_path), "transcript": str(md_path),
            "checker": _verdict_json(verdict),
            "instances": [{"name": c["name"], "alpha": c["totals"]["alpha"], "tv": c["totals"]["tv"],
                           **c["claims"]} for c in certs],
        })
    else:
        what = f"V = {certs[0]['vocab_size']}"
        if len(certs) > 1:
            what = f"{len(certs)} pairs, {what}, alpha from {transcript.show(min(alphas))} to {transcript.show(max(alphas))}"
        else:
            what += f", alpha = {transcript.show(alphas[0])}"
        print(f"{args.name}: {'PROVED' if verdict.valid else 'NOT PROVED'} ({what}); {verdict.detail} ({form} certificate)")
        print(f"  {json_path}\n  {md_path}")
    return 0 if verdict.valid else 1


def _read_once(path: str) -> tuple[object, checker.Verdict | None]:
    """Read ``path`` once and parse it the checker's way: (document, None), or (None, the
    rejection) when it cannot be read or is not valid JSON. Everything after works on these
    bytes only, so what is checked is what is rendered."""
    try:
        return checker.parse(checker.read(path)), None
    except checker.Rejection as rejection:
        return None, checker.Verdict(False, rejection.reason, rejection.detail)


_BUNDLE_STATEMENT = "For each row of the target file and the same row of the draft file (a single row pairs with every row): "


def _check_atol(atol: float | None) -> None:
    if atol is not None and not 0 < atol < 1:  # NaN fails both comparisons
        raise _Usage(f"--atol must lie in (0, 1), got {atol!r}")


def _check_name(name: str) -> None:
    """A certificate's name becomes a file name in --out: no path may hide in it."""
    seps = {"/", "\\", os.sep, os.altsep} - {None}
    if not name or ".." in name or any(sep in name for sep in seps) or "\0" in name:
        raise _Usage(f"--name must be a plain file name without path separators or '..', got {name!r}")


def _pairs(target: Distributions, draft: Distributions, form: str) -> list[tuple[Any, Any]]:
    """(p, q) for each pair: row i with row i, or a single row with every row; for a compact
    certificate each as float64 rows, else as exact vectors."""
    n, m = len(target.vectors), len(draft.vectors)
    if n != m and 1 not in (n, m):
        raise _Usage(f"--target holds {n} rows and --draft {m}; give the same number of rows, or one row for all")
    if target.vocab_size != draft.vocab_size:
        raise _Usage(f"--target has V = {target.vocab_size} tokens and --draft V = {draft.vocab_size}; they must match")
    rows = [_float_rows(d) if form == "compact" else list(d.vectors) for d in (target, draft)]
    return [(rows[0][min(i, n - 1)], rows[1][min(i, m - 1)]) for i in range(max(n, m))]


def _exact_float64(vec: Any) -> Any:
    """The exact vector as float64s if every value is one exactly (a one-hot row is), else None."""
    import numpy as np

    values = vec.fractions()
    floats = np.array([float(x) for x in values], dtype=np.float64)
    return floats if all(Fraction(f) == x for f, x in zip(floats.tolist(), values)) else None


def _float_rows(loaded: Distributions) -> list[Any]:
    """The float rows of a float file; an exact file's rows as float64 where exact (else None)."""
    if loaded.floats is not None:
        return list(loaded.floats)
    return [_exact_float64(v) for v in loaded.vectors]


def _form(choice: str, target: Distributions, draft: Distributions) -> str:
    """Which certificate --certificate asks for, given the inputs."""
    if choice == "full":
        return "full"
    if choice == "auto" and (target.vocab_size <= COMPACT_ABOVE or (target.floats is None and draft.floats is None)):
        return "full"
    if all(f is not None for f in _float_rows(target) + _float_rows(draft)):
        return "compact"
    if choice == "auto":
        return "full"
    raise _Usage("--certificate compact stores p and q as float64 bit patterns, but an input has exact "
                 "'n/d' values no float64 holds; use --certificate full (or auto)")


def _verdict_json(verdict: checker.Verdict) -> dict[str, Any]:
    return {"valid": verdict.valid, "reason": None if verdict.reason is None else verdict.reason.value,
            "detail": verdict.detail, "checker_version": checker.VERSION}


def _ticking(bar: Any, fn: Callable[[], checker.Verdict]) -> checker.Verdict:
    """``fn()``, with ``bar``'s elapsed time refreshed every half second while it runs (in a
    worker thread), so that a long single check does not look stuck."""
    if bar is None or bar.disable:
        return fn()
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["verdict"] = fn()
        except BaseException as exc:  # re-raised below, in the caller's thread
            result["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.5)
        bar.refresh()
    if "error" in result:
        raise result["error"]
    return result["verdict"]


def _verify(doc: Any, bar: Any = None) -> checker.Verdict:
    """The trusted checker's verdict on a parsed document (from :func:`_read_once`): one call of
    :func:`specproof.checker.check` on the whole document, so that the command and
    ``checker.check_file`` apply the same document rules. ``bar`` (a tqdm bar, optional)
    advances by one per certificate checked, through the checker's ``progress`` callback."""
    step = None if bar is None else (lambda: bar.update(1))
    return _ticking(bar, lambda: checker.check(doc, progress=step))


def _terminal(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1, line and paragraph separators, bidi
    controls) written as a visible escape, so that no name in a document can move the cursor,
    erase a line or recolor what the terminal shows."""
    return "".join(_escaped(c) if c in _BIDI or unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in text)


def _escaped(c: str) -> str:
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


#: Unicode's bidirectional controls (embeddings, overrides, isolates, marks).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _say(text: str) -> None:
    """One line of ``check`` output on standard output, control characters escaped."""
    print(_terminal(text))


def _reference_of(facts: dict[str, Any]) -> str:
    """The law a certificate's verdict is measured against, in words."""
    if facts["schema"] == checker.OUTCOME_SCHEMA:
        return facts["reference_source"]
    if facts["schema"] in (checker.BLOCK_SCHEMA, checker.CHAIN_SCHEMA):
        return "p (the target's joint law of the stream)"
    return "p"


def _is_lossless(facts: dict[str, Any]) -> bool:
    """Whether a valid certificate's recomputed law is its reference's (every kind)."""
    claims = facts["claims"]
    return claims.get("lossless", claims.get("dist_equals_p", claims.get("stream_equals_target_law")))


def _tv_of(facts: dict[str, Any]) -> Fraction:
    if facts["schema"] == checker.BLOCK_SCHEMA:
        return facts["stream_tv"]
    return Fraction(facts["totals"]["tv"].num, facts["totals"]["tv"].den)


def _check(args: argparse.Namespace) -> int:
    doc, verdict = _read_once(args.certificate)
    if verdict is None and _is_record(doc):
        return _check_record(args.certificate, doc, as_json=args.json)
    if verdict is None:
        count = len(doc["certificates"]) if isinstance(doc, dict) and isinstance(doc.get("certificates"), list) else 1
        with _bar(total=count, unit="certificate", desc="checking") as bar:
            verdict = _verify(doc, bar)
    if (args.target is None) != (args.draft is None):
        raise _Usage("--target and --draft go together")
    binding: dict[str, Any] = {}
    if args.target is not None and verdict.valid:
        failure, binding = _bind(verdict, args)
        if failure:
            verdict = checker.Verdict(False, checker.Reason.INPUT, failure, verdict.facts)
        else:
            verdict = checker.Verdict(True, None, verdict.detail + _binding_note(binding), verdict.facts)
    code = 0 if verdict.valid else 2 if verdict.reason is checker.Reason.UNREADABLE else 1
    trees = [f for f in verdict.facts if f.get("schema") in (checker.OUTCOME_SCHEMA, checker.BLOCK_SCHEMA)] \
        if verdict.valid else []
    lossless = [bool(f["claims"]["lossless"]) for f in trees]
    tvs = [_tv_of(f) for f in trees]
    lossy_any = verdict.valid and not all(_is_lossless(f) for f in verdict.facts)
    if args.require_lossless and lossy_any:
        code = 1
    file = args.certificate
    if args.json:
        bind = {} if args.target is None else {
            "bound_to_inputs": verdict.valid and not binding.get("unbound", True),
            "bound_rows": binding.get("bound", []), "unbound_rows": binding.get("unbound", []),
            "unread_inputs": binding.get("unread", [])}
        result = {"lossless": lossless, "tv": [transcript.exact_text(x) for x in tvs],
                  "tv_approx": [transcript.show(x) for x in tvs],
                  "reference": [_reference_of(f) for f in trees]} if trees else {}
        required = {"required_lossless": verdict.valid and not lossy_any} if args.require_lossless else {}
        _print_check_json({"command": "check", "file": file, **_verdict_json(verdict), **bind, **result, **required})
    elif verdict.valid:
        _say(f"{file}: valid ({verdict.detail})")
        given = sorted({g for f in trees for g in f["given"]})
        if given:
            _say(f"  trusted as stated (given rows, not re-derived): {', '.join(given[:10])}"
                 + (f" and {len(given) - 10} more" if len(given) > 10 else ""))
        if trees:  # what the certified law says (an outcome or block certificate may prove a verifier lossy)
            lossy = [i for i, ok in enumerate(lossless) if not ok]
            refs = sorted({_reference_of(f) for f in trees})
            against = "reference: " + (", ".join(refs) if len(refs) <= 3 else f"{', '.join(refs[:3])} and {len(refs) - 3} more")
            if not lossy:
                _say(f"  the certified verifier is LOSSLESS ({against})")
            else:
                first = trees[lossy[0]]
                stream = "stream " if first["schema"] == checker.BLOCK_SCHEMA else ""
                at = f", at {len(lossy)} of {len(lossless)} positions" if len(lossless) > 1 else ""
                _say(f"  the certified verifier is LOSSY (exact {stream}TV {transcript.number_text(tvs[lossy[0]])}{at}; "
                     f"reference: {_reference_of(first)})")
        if args.require_lossless and lossy_any:
            _say("  --require-lossless: the certified verifier is not lossless (exit 1)")
    else:
        _say(f"{file}: REJECTED ({verdict.reason.value}): {verdict.detail}")
    return code


_print_check_json = _print_json  # check's output, like every --json output, escapes terminal controls


def _binding_note(binding: dict[str, Any]) -> str:
    """What --target/--draft were compared with, in words, for the verdict line."""
    bound = binding["bound"]
    roles = sorted({name.split()[0] for name in bound})  # "p", "q", or "p after [ids]" in a block
    if not bound:
        note = "; no row of the certificate was compared with --target or --draft (the tree reads neither p nor q)"
    elif roles == ["p", "q"]:
        note = "; p and q are exactly --target's and --draft's values made exact"
    elif roles == ["p"]:
        note = "; p is exactly --target's values made exact"
    else:
        note = "; q is exactly --draft's values made exact"
    if len(bound) > len(roles):  # a block certificate's rows after several prefixes
        note += f" (at each of the {len(bound)} rows compared: {', '.join(bound[:4])}" + (" ...)" if len(bound) > 4 else ")")
    if binding["unread"] and bound:
        note += f" ({' and '.join(binding['unread'])} not read by the certified tree)"
    if binding["unbound"]:
        names = binding["unbound"]
        note += (f"; read by the tree but bound to nothing (the certificate's own values): {', '.join(names[:10])}"
                 + (f" and {len(names) - 10} more" if len(names) > 10 else ""))
    return note


def _bind(verdict: checker.Verdict, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """("", what was compared) if every row the checker re-derived from an input that the
    certificate reads equals --target's or --draft's row made exact (row i with row i, a single
    row with every row; every outcome or block certificate with a single pair), else (why not,
    {}). What was compared: ``bound`` (the rows compared, "p", "q" or "p after [ids]"),
    ``unread`` (p or q, never read by a tree, so not compared) and ``unbound`` (rows the tree
    reads that nothing was compared with: the input row ``proposal`` and given rows)."""
    _check_atol(args.atol)
    atol = DEFAULT_FLOAT_ATOL if args.atol is None else args.atol
    target = load_distributions(args.target, "p", atol=atol, atol_name="--atol")
    draft = load_distributions(args.draft, "q", atol=atol, atol_name="--atol")
    if any("law" not in facts for facts in verdict.facts):
        return "--target/--draft bind one-position certificates; a chain certificate holds many rows", {}
    pairs = _pairs(target, draft, "full")
    trees = all(facts["schema"] in (checker.OUTCOME_SCHEMA, checker.BLOCK_SCHEMA) for facts in verdict.facts)
    if len(pairs) == 1 and trees:  # the same rows at every position of a tree or block
        pairs = pairs * len(verdict.facts)
    if len(pairs) != len(verdict.facts):
        return f"the certificate holds {len(verdict.facts)} pair(s), --target and --draft give {len(pairs)}", {}
    bound: set[str] = set()
    unread: set[str] = set()
    unbound: set[str] = set()
    for i, (facts, (p, q)) in enumerate(zip(verdict.facts, pairs)):
        if facts["schema"] == checker.BLOCK_SCHEMA:  # the input rows the tree and the stream check read
            read = set(facts["reads"])
            mine = [(f"{role} after {list(prefix)}", role, row) for (role, prefix), row in sorted(facts["inputs"].items())
                    if (role, prefix) in read]
            unread.update(k for k in ("p", "q") if not any(role == k for role, _ in read))
            unbound.update(f"given row {g}" for g in facts["given_reads"])
        elif facts["schema"] == checker.OUTCOME_SCHEMA:  # the input rows the tree reads
            mine = [(k, k, facts["inputs"][k]) for k in ("p", "q") if k in facts["reads"]]
            unread.update(k for k in ("p", "q") if k not in facts["reads"])
            unbound.update(k for k in facts["reads"] if k not in ("p", "q"))  # proposal
            unbound.update(f"given row {g}" for g in facts["given_reads"])
        else:
            law = facts["law"]
            mine = [("p", "p", [checker.Ratio(x, law.den) for x in law.target]),
                    ("q", "q", [checker.Ratio(x, law.den) for x in law.draft])]
        for name, role, row in mine:
            option, theirs = ("--target", p) if role == "p" else ("--draft", q)
            values, exact = theirs.fractions(), [Fraction(x.num, x.den) for x in row]
            if len(values) != len(exact):
                return f"certificate {i}: {name} has {len(exact)} tokens, {option} has {len(values)}", {}
            for t, (x, y) in enumerate(zip(exact, values)):
                if x != y:
                    return (f"certificate {i}: {name}({t}) is {transcript.show(x)}, but {option} gives "
                            f"{transcript.show(y)}"), {}
            bound.add(name)
    return "", {"bound": sorted(bound), "unread": sorted(unread), "unbound": sorted(unbound)}


def _fresh_symbolic(checks: bool = True) -> dict:
    from .symbolic_proof import prove_every_v

    return prove_every_v(checks)


def _is_record(doc: object) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("schema"), str) and doc["schema"] in _RECORDS


#: Records that are not certificates: schema -> (what recomputes them, what it is called).
_RECORDS = {
    "specproof.symbolic-proof/1": (_fresh_symbolic, "the SymPy proof"),
}


#: The fields of a symbolic-proof record and of each of its steps, with their JSON types: a
#: record of any other shape is rejected before the SymPy proof is re-run (seconds of work).
_RECORD_FIELDS = {"assumptions": list, "conclusion": str, "formal_proof": dict, "name": str, "proved": bool,
                  "schema": str, "statement": str, "steps": list, "sympy_version": str}
_RECORD_STEP_FIELDS = {"check", "claim", "id", "method", "result", "uses", "verified"}


def _record_shape(doc: dict) -> str:
    """"" if ``doc`` has the fields of a symbolic-proof record (and its steps theirs), else why not."""
    if set(doc) != set(_RECORD_FIELDS) or any(type(doc[k]) is not t for k, t in _RECORD_FIELDS.items()):
        return f"a record has exactly the fields {sorted(_RECORD_FIELDS)}, with their types"
    if not doc["steps"] or any(not isinstance(s, dict) or set(s) != _RECORD_STEP_FIELDS for s in doc["steps"]):
        return f"a record's steps are objects with exactly the fields {sorted(_RECORD_STEP_FIELDS)}"
    return ""


def _check_record(path: str, doc: dict, as_json: bool = False) -> int:
    """A record (the symbolic proof) is re-checked by recomputing it, not by the kernel. The cheap
    checks come first: its shape (:func:`_record_shape`), then equality with the record a run that
    proves everything writes, built without running a check (``fresh_fn(False)``); only a record
    equal to that one costs a run of the proof, so a malformed or tampered record costs none."""
    fresh_fn, what = _RECORDS[doc["schema"]]
    shape = _record_shape(doc)
    expected = None if shape else fresh_fn(False)
    fresh = fresh_fn() if expected == doc else None
    if shape:
        valid, detail = False, shape
    elif expected != doc:
        valid, detail = False, (f"the record differs from a fresh run of {what} (from the record a run that "
                                f"proves everything writes; the proof was not re-run)")
    elif fresh != doc:
        valid, detail = False, f"the record differs from a fresh run of {what}"
    elif not fresh["proved"]:
        valid, detail = False, f"{what} did not prove everything"
    else:
        valid, detail = True, f"re-ran {what}: it proves everything the record says"
    if as_json:
        _print_check_json({"command": "check", "file": path, "valid": valid, "reason": None if valid else "record",
                           "detail": detail, "checker_version": None})
    elif valid:
        _say(f"{path}: valid ({detail})")
    else:
        _say(f"{path}: REJECTED (record): {detail}")
    return 0 if valid else 1


def _transcript(args: argparse.Namespace) -> int:
    doc, verdict = _read_once(args.certificate)
    if verdict is None and _is_record(doc):
        if _check_record(args.certificate, doc) != 0:  # a record is re-checked, never trusted
            return 1
        verdict, ok = None, True
    else:
        if verdict is None:  # (a Verdict is falsy when invalid: an unreadable file keeps its own)
            verdict = checker.check(doc)
        ok = verdict.valid
        if doc is None:  # unreadable, or not JSON: nothing to render
            print(_terminal(f"{args.certificate}: cannot render ({verdict.reason.value}): {verdict.detail}"), file=sys.stderr)
            return 2
    figures: list[tuple[str, str]] = []
    if args.plots:
        if not args.out or verdict is None or not verdict.valid:
            raise _Usage("--plots needs --out (the figures are written beside it) and a valid certificate")
        try:
            from .plots import figures_for
            figures = figures_for(doc, verdict.facts, Path(args.out).with_suffix(""), log=args.log)
        except ModuleNotFoundError as exc:
            raise _Usage(f"--plots needs {exc.name} (pip install 'specproof[report]')") from None
    try:
        text = transcript.render(doc, verdict, json_name=Path(args.certificate).name, figures=figures)
    except (Exception, RecursionError) as exc:  # a last resort: a clean refusal, never a traceback
        print(_terminal(f"{args.certificate}: cannot render: the document lacks or garbles "
                        f"{type(exc).__name__}: {exc!s:.200}"), file=sys.stderr)
        return 2
    if args.format == "latex":
        try:
            from .latex import to_latex
            text = to_latex(text, f"Proof transcript: {Path(args.certificate).name}")
        except ModuleNotFoundError as exc:
            raise _Usage(f"--format latex needs {exc.name} (pip install 'specproof[report]')") from None
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8", newline="\n")
    else:
        sys.stdout.write(text)
    return 0 if ok else 1


def _crosscheck(args: argparse.Namespace) -> int:
    if args.blocks is None and args.variants is None and args.pairs < 1:
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
        return _crosscheck_result(args, report, {
            "mode": "blocks", "blocks": report.blocks, "seed": args.seed, "recomputed": report.recomputed,
            "accepted": _worst(report.accepted), "joint": _worst(report.joint),
            "before_rounding": _worst(report.before_rounding)})
    if args.variants is not None:
        if args.variants < 1:
            raise _Usage(f"--variants must be >= 1, got {args.variants}")
        with tqdm(total=args.variants, unit="pair", file=sys.stderr, disable=None) as bar:
            report = crosscheck_variants(args.variants, args.seed, progress=lambda _: bar.update(1), **kwargs)
        return _crosscheck_result(args, report, {
            "mode": "variants", "pairs": report.pairs, "seed": args.seed, "dist": _worst(report.dist),
            "acceptance": _worst(report.acceptance), "accepted_at": _worst(report.accepted_at)})
    if args.real:
        with tqdm(unit="pair", file=sys.stderr, disable=None) as bar:
            report = crosscheck_real(progress=lambda _: bar.update(1), **kwargs)
        return _crosscheck_result(args, report, {"mode": "real", "pairs": report.pairs, "dist": _worst(report.dist),
                                                 "alpha": _worst(report.alpha)})
    with tqdm(total=args.pairs, unit="pair", file=sys.stderr, disable=None) as bar:
        report = crosscheck(args.pairs, args.seed, progress=lambda _: bar.update(1), **kwargs)
    return _crosscheck_result(args, report, {"mode": "pairs", "pairs": report.pairs, "seed": args.seed,
                                             "dist": _worst(report.dist), "alpha": _worst(report.alpha)})


def _crosscheck_result(args: argparse.Namespace, report: Any, fields: dict[str, Any]) -> int:
    if args.json:
        _print_json({"command": "crosscheck", "passed": report.passed, "bound": report.bound, **fields})
    else:
        print(report.summary())
    return 0 if report.passed else 1


def _worst(worst: Any) -> dict[str, Any]:
    """A worst error as JSON: exact ("n/d") and as a float, with where it occurred."""
    out: dict[str, Any] = {"error": format_fraction(worst.error), "error_float": float(worst.error)}
    pair = worst.pair
    if pair is not None:
        out["kind"] = pair.kind
        token = worst.token
        out["at"] = list(token) if isinstance(token, tuple) else token
        if hasattr(pair, "tokens"):  # a drafted block
            out.update(gamma=len(pair.tokens), vocab_size=len(pair.target[0]), tokens=list(pair.tokens))
        else:
            out["vocab_size"] = len(pair.p)
    return out


def _fixtures(args: argparse.Namespace) -> int:
    from . import fixtures

    if args.regenerate:
        out = Path(args.dir)
        package = Path(fixtures.__file__).resolve().parent.parent
        where = out.resolve()
        if where == package or package in where.parents:
            raise _Usage(f"--dir {out} lies inside the installed specproof package ({package}); regenerate into "
                         "another directory and compare the files with the shipped ones")
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
    au.add_argument("--certificate", metavar="FILE.json",
                    help="write the position's outcome tree as a certificate that `specproof check` re-verifies "
                         "(with --real: a bundle, one per pair; --verifier block: the block certificate); the "
                         "block figures of --gamma/--drafted are not in it (see --block-certificate)")
    au.add_argument("--block-certificate", metavar="FILE.json",
                    help="with --gamma: write the whole step over a block of G drafts (the chain under the rule, "
                         "typical acceptance, or block verification) as a block certificate that `specproof check` "
                         "re-verifies: its law, accepted-length law, expected emitted tokens and stream TV from the "
                         "target's joint law (no stop tokens or --proposal)")
    au.add_argument("--list", action="store_true", help="list the named rules with their description and source")
    au.add_argument("--verifier", choices=["chain", "block", "multidraft", "tree", "typical"], default="chain",
                    help="the verifier (default chain, under --policy); the others are the textbook variants of "
                         "specproof.variants (--gamma: block length or tree depth)")
    au.add_argument("--drafts", type=int, default=2, metavar="K",
                    help="multidraft: drafts per position; tree without --tree: q's top-K children per node")
    au.add_argument("--method", choices=["with-replacement", "without-replacement", "spectr"],
                    default="with-replacement", help="multidraft: how the K drafts are drawn and verified")
    au.add_argument("--tree", metavar="FILE.json", help="tree: a token tree [[token, [children...]], ...]")
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
        "reference_is": ("the target's law p" if rule.reference.identity else
                         "the argmax of p (greedy)" if rule.acceptance == "greedy" else
                         "p after the rule's processing (temperature, top-k, top-p, min-p)"),
        "differing": law.differing(),
        "out_of_range": {str(k): ff(v) for k, v in sorted(law.out_of_range.items())},
        "arithmetic": _arithmetic_note(rule, len(law.law)),
    }


def _arithmetic_note(rule, vocab_size: int) -> str:
    """What the audit modelled of the code's arithmetic, and what it did not."""
    arith = rule.arithmetic
    if arith.is_exact:
        text = "exact rational arithmetic (the ratio p/q and the residual are not rounded)"
    else:
        text = (f"{arith.describe(rule.comparison)}; rows rounded to {arith.dtype}; each operation modelled as IEEE "
                "round-to-nearest-even of its exact result")
    text += f"; coin {rule.coin.name}"
    return "; ".join([text, *arith.caveats(vocab_size)])


def _audit_certificate(p, q, name: str, rule, proposal=None, provenance=None, label: str = "") -> dict:
    """The outcome certificate of one audited position (see
    :func:`specproof.certificate.build_outcome_certificate`)."""
    from .audit import position_law

    tree = position_law(p, q, rule, proposal=proposal).tree  # the tree the audit reports
    what = f"{label}: " if label else ""
    statement = (f"{what}Under the verifier rule {name!r} ({rule.describe()}), the token emitted at one position "
                 "has the law listed, its acceptance probability is alpha and its exact TV from the reference "
                 "(the target's law) is TV; lossless iff TV = 0.")
    return certificate.build_outcome_certificate(
        tree, name=f"{label or 'audit'}, rule {name}", statement=statement,
        provenance={"rule": name, "rule_fields": rule.as_dict(), **(provenance or {})})


def _audit_report(name: str, out: dict) -> str:
    from fractions import Fraction

    def show(text: str) -> str:
        x = Fraction(text)
        return text if len(text) <= 100 else f"{float(x):.6g} (exact: {len(text)} characters; see --json)"

    lines = [f"rule {name}: {out['verdict'].upper()}",
             f"  TV from the reference law ({out.get('reference_is', 'the target law p')}): {show(out['tv'])}",
             f"  alpha (P accepted under the rule): {show(out['alpha'])}; textbook sum min(p, q): {show(out['textbook_alpha'])}"]
    if "arithmetic" in out:
        lines.append(f"  arithmetic modelled: {out['arithmetic']}")
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
    for key in ("certificate", "block_certificate"):
        if key in out:
            lines.append(f"  {key.replace('_', ' ')} written: {out[key]}")
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
    if args.block_certificate and args.gamma is None:
        raise _Usage("--block-certificate needs --gamma (the block's drafts)")
    _audit_size_guard(args, p, q)
    if args.verifier != "chain":
        if args.stop_token or args.policy != "standard" or args.proposal is not None or args.drafted is not None:
            raise _Usage(f"--stop-token, --policy, --proposal and --drafted apply to the chain verifier; "
                         f"--verifier {args.verifier} is the textbook variant")
        return _audit_variant(args, p, q)
    out = {"rule": name, "rule_fields": rule.as_dict(), **_audit_position(p, q, rule, proposal)}
    if args.certificate:
        doc = _audit_certificate(p, q, name, rule, proposal, {"target": args.target, "draft": args.draft})
        out["certificate"] = str(certificate.write(doc, args.certificate))
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
        if args.block_certificate:
            doc = _rule_block_certificate(p, q, name, rule, args, block, proposal)
            out["block_certificate"] = str(certificate.write(doc, args.block_certificate))
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


#: Largest number of drafted prefixes (D^gamma, D = the draft's support) `audit --gamma` enumerates,
#: and of branches (D^gamma * V) a block certificate may hold; the Python API has no such limit.
AUDIT_MAX_PREFIXES = 20_000
AUDIT_MAX_CERTIFIED = 20_000


def _audit_size_guard(args: argparse.Namespace, p, q) -> None:
    """Refuse, before any work, a --gamma whose blocks are too many to enumerate here, and stop
    tokens outside [0, V)."""
    v = len(p)
    bad = [t for t in args.stop_token or () if not 0 <= t < v]
    if bad:
        raise _Usage(f"--stop-token {bad[0]} is not a token id in [0, {v})")
    if args.gamma is None or args.verifier == "tree" or args.gamma < 1:
        return
    support = sum(1 for x in q.fractions() if x)
    prefixes = support ** args.gamma
    if prefixes > AUDIT_MAX_PREFIXES:
        raise _Usage(f"--gamma {args.gamma} with {support} draftable tokens enumerates up to {support}^{args.gamma} = "
                     f"{prefixes} drafted blocks, above {AUDIT_MAX_PREFIXES}: use a smaller gamma, or the Python API "
                     "(specproof.audit.block_law, specproof.variants) with a budget of your own")
    if args.block_certificate and prefixes * v > AUDIT_MAX_CERTIFIED:
        raise _Usage(f"--block-certificate at gamma {args.gamma}: about {support}^{args.gamma} x V = {prefixes * v} "
                     f"branches, above {AUDIT_MAX_CERTIFIED} (the certificate would take minutes and many MB)")


def _rule_block_certificate(p, q, name: str, rule, args: argparse.Namespace, block, proposal) -> dict:
    """The block certificate of the chain under ``rule``: each accepted prefix's position tree
    (:func:`specproof.audit.position_tree`), composed by :func:`specproof.outcome.block_tree`."""
    from .audit import position_tree
    from .outcome import InvalidTree, block_tree

    if args.stop_token or proposal is not None:
        raise _Usage("--block-certificate: stop tokens and --proposal are not in block certificates yet")
    if position_tree(p, q, rule).recipes.get("reference") != ("copy", "p"):
        raise _Usage(f"--block-certificate: the rule {name!r} processes the target (its reference is not p: greedy or processed rows); a "
                     "block certificate states the stream against p itself")
    if block.stream_tv is None:
        raise _Usage("--block-certificate: V**(gamma + 1) is above the enumeration limit of the stream TV")
    try:
        tree = block_tree(lambda prefix: position_tree(p, q, rule, unchecked=len(prefix) < rule.unchecked_drafts),
                          args.gamma)
    except InvalidTree as exc:
        raise _Usage(f"--block-certificate: {exc}") from None
    return certificate.build_block_certificate(
        tree, gamma=args.gamma, stream_tv=block.stream_tv, name=f"chain under {name}, gamma = {args.gamma}",
        provenance={"rule": name, "target": args.target, "draft": args.draft},
        statement=f"Under the verifier rule {name!r} ({rule.describe()}), one step over {args.gamma} drafts on "
                  f"--target's and --draft's rows after every prefix: the emitted block, continued by sampling the "
                  f"target, is at the stated exact TV from the target's joint law over gamma + 1 tokens (lossless iff 0).")


def _audit_variant(args: argparse.Namespace, p, q) -> int:
    from .variants import audit_summary, format_summary

    tree = None
    if args.tree is not None:
        try:
            with open(args.tree, encoding="utf-8") as fh:
                tree = json.load(fh)
        except (OSError, json.JSONDecodeError) as exc:
            raise _Usage(f"--tree {args.tree}: {exc}") from None
    out = audit_summary(p, q, args.verifier, drafts=args.drafts, method=args.method, tree=tree, gamma=args.gamma)
    if args.certificate:
        out["certificate"] = str(certificate.write(_variant_certificate(p, q, args, out), args.certificate))
    if args.block_certificate:
        from . import variants

        provenance = {"verifier": args.verifier, "target": args.target, "draft": args.draft}
        if args.verifier == "block":
            doc = variants.block_verification_certificate(p, q, args.gamma, provenance=provenance)
        elif args.verifier == "typical":
            doc = variants.typical_block_certificate(p, q, args.gamma, provenance=provenance)
        else:
            raise _Usage(f"--block-certificate: the {args.verifier} verifier has no block certificate (its "
                         "positions are certified by --certificate)")
        out["block_certificate"] = str(certificate.write(doc, args.block_certificate))
    print(json.dumps(out, indent=2, sort_keys=True) if args.json else format_summary(out))
    return 0 if out["verdict"] == "lossless" else 1


def _variant_certificate(p, q, args: argparse.Namespace, out: dict) -> dict:
    """The certificate of a variant: an outcome certificate of its position (multidraft,
    typical), a bundle of one per node of a token tree, or a block certificate (block
    verification over --gamma drafts, the same rows after every prefix)."""
    from . import variants

    provenance = {"verifier": args.verifier, "target": args.target, "draft": args.draft}
    statement = f"The {args.verifier} verifier at one position on --target/--draft emits the law listed; lossless iff TV = 0."
    if args.verifier == "multidraft":
        tree = variants.multidraft_law(p, q, args.drafts, method=args.method).tree
    elif args.verifier == "typical":
        tree = variants.typical_law(p, q).tree
    elif args.verifier == "tree":
        law = variants.deterministic_tree_law(p, out["tree"])
        certs = [certificate.build_outcome_certificate(
            t, name=f"tree node [{','.join(map(str, path)) or 'root'}]", reference="p", provenance=provenance,
            statement=f"The token tree's node after the accepted path {list(path)} emits the law listed.")
            for path, t in sorted(law.positions.items())]
        return certificate.build_bundle(certs, name="token tree", statement="Each node of the token tree emits its law.",
                                        provenance=provenance)
    else:
        return variants.block_verification_certificate(
            p, q, out["gamma"], provenance=provenance,
            statement=f"Block verification (Sun et al. 2024, Algorithm 2) over {out['gamma']} drafts, --target's and "
                      f"--draft's rows after every prefix: the emitted block, continued by sampling the target, has "
                      f"the target's joint law over gamma + 1 tokens (lossless iff the stream TV is 0).")
    return certificate.build_outcome_certificate(tree, name=f"{args.verifier} verifier", statement=statement,
                                                 reference="p", provenance=provenance)


def _audit_real(args: argparse.Namespace, name: str, rule) -> int:
    from . import fixtures

    sources = {"phone": [fixtures.phone_lm_pairs], "smollm2": [fixtures.smollm2_pairs],
               "all": [fixtures.phone_lm_pairs, fixtures.smollm2_pairs]}[args.real]
    results, certs = [], []
    for source in sources:
        for rp in tqdm(list(source()), unit="pair", file=sys.stderr, disable=None, desc=name):
            results.append({"pair": rp.name, "rule": name, **_audit_position(rp.p, rp.q, rule)})
            if args.certificate:
                certs.append(_audit_certificate(rp.p, rp.q, name, rule, label=rp.name,
                                                provenance={"pair": rp.name, **dict(rp.provenance)}))
    if args.certificate:
        certificate.write(certificate.build_bundle(
            certs, name=f"real pairs, rule {name}", statement=f"Each position's law under the verifier rule {name!r}."),
            args.certificate)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        for r in results:
            print(_audit_report(name, r).replace(f"rule {name}:", f"{r['pair']}, rule {name}:", 1))
    return 0 if all(r["verdict"] == "lossless" for r in results) else 1


_COMMANDS = {"prove": _prove, "check": _check, "transcript": _transcript, "fixtures": _fixtures,
             "crosscheck": _crosscheck, "audit": _audit}


# --------------------------------------------------------------------------- trace (issue 12)


def _add_trace_parser(sub: argparse._SubParsersAction) -> None:
    tc = sub.add_parser(
        "trace", help="the exact law of a real library's speculative sampler, by controlled re-execution",
        description="Run a library's verifier under specproof.trace (every random number supplied by specproof) "
        "and print the exact law of the emitted block, its exact TV from the target's joint law and a verdict. "
        "Exit 0 lossless, 1 lossy, 2 usage or bad input.")
    lib = tc.add_subparsers(dest="library", required=True, metavar="LIBRARY")
    hf = lib.add_parser(
        "transformers", help="transformers.generation.utils._speculative_sampling (needs torch and transformers)",
        description="Trace Hugging Face transformers' _speculative_sampling: gamma drafts drawn from the draft "
        "logits, then verified by the function (batch 1). T: [gamma + 1, V] target logits, D: [gamma, V] draft "
        "logits, .json (rows of numbers, -Infinity or \"-inf\" allowed) or .npy. Exit 0 lossless, 1 lossy, 2 usage.")
    hf.add_argument("--target-logits", metavar="T", required=True, help="target logits [gamma + 1, V]")
    hf.add_argument("--draft-logits", metavar="D", required=True, help="draft logits [gamma, V]")
    hf.add_argument("--gamma", type=int, metavar="G", help="drafts per block (default: the rows of D); must fit T and D")
    hf.add_argument("--ensemble-weight", type=float, metavar="W",
                    help="transformers' assistant_ensemble_weight in (0, 1] (default: none, the standard verifier)")
    hf.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                    help="dtype of the logits tensors (default float32, as models emit)")
    hf.add_argument("--json", action="store_true", help="print one JSON object: verdict, tv ('n/d'), law, ...")
    py = lib.add_parser(
        "python", help="your own sampler: MODULE:FUNCTION, called as FUNCTION(target, draft)",
        description="Trace your own verifier, FUNCTION(target, draft) from MODULE (an importable module, or a "
        "path to a .py file), on the rows of P and Q (the formats of `prove`; [V] for one position, [gamma + 1, V] "
        "and [gamma, V] for a block) given as tensors (or arrays) of --dtype. Prints the verdict: lossless (the "
        "target's law exactly), float-faithful (exactly a correct float implementation: its TV from p is the float "
        "floor) or lossy, the exact TVs and the arithmetic matched. Exit 0 lossless or float-faithful (--strict: "
        "lossless only), 1 lossy, 2 usage or bad input.")
    py.add_argument("function", metavar="MODULE:FUNCTION", help="e.g. mysampler:verify or path/to/file.py:verify")
    py.add_argument("--target", metavar="P", help="target rows: [V] or [gamma + 1, V]")
    py.add_argument("--draft", metavar="Q", help="draft rows: [V] or [gamma, V]")
    py.add_argument("--gamma", type=int, metavar="G", help="drafts per block (default: from the rows' shapes)")
    py.add_argument("--dtype", choices=("float16", "bfloat16", "float32", "float64"), default="float32",
                    help="dtype of the rows given to the sampler (default float32); entries rounded to nearest")
    py.add_argument("--array", choices=("torch", "numpy"), default="torch",
                    help="give the rows as torch tensors (default) or NumPy arrays")
    py.add_argument("--numpy-rng", metavar="NAME",
                    help="also pass a traced numpy.random.Generator as the keyword argument NAME")
    py.add_argument("--max-runs", type=int, default=200_000, metavar="N", help="most runs of the sampler (default 200,000)")
    py.add_argument("--search", action="store_true",
                    help="instead of --target/--draft, search small rational rows (V 2..--max-vocab, denominators up "
                         "to --max-denominator) for the smallest input on which the sampler is lossy")
    py.add_argument("--reference", metavar="MODULE:FUNCTION",
                    help="the differential test: your plain (non-speculative) sampler, called as FUNCTION(row) on "
                         "the target's row at each position; the speculative step is judged against its law of "
                         "gamma + 1 tokens instead of the target's rows")
    py.add_argument("--max-vocab", type=int, default=4, metavar="V", help="--search: largest V (default 4)")
    py.add_argument("--max-denominator", type=int, default=4, metavar="D",
                    help="--search: largest denominator of an entry (default 4)")
    py.add_argument("--strict", action="store_true", help="float-faithful exits 1 too")
    py.add_argument("--json", action="store_true",
                    help="print one JSON object: verdict, tv, tv_from_float_ideal, arithmetic, law ('n/d')")


def _load_function(text: str):
    """MODULE:FUNCTION, MODULE importable (the current directory first) or a path to a .py file."""
    import importlib
    import importlib.util

    module_name, sep, func_name = text.rpartition(":")
    if not sep or not module_name or not func_name:
        raise _Usage(f"{text!r} is not MODULE:FUNCTION")
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            spec = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if spec is None or spec.loader is None or not Path(module_name).is_file():
                raise _Usage(f"cannot load {module_name!r}: not a Python file")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except _Usage:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's module failed to import: report, exit 2
        raise _Usage(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise _Usage(f"{module_name!r} has no function {func_name!r}")
    return func


def _comparison_json(result) -> dict:
    from .rational import format_fraction as ff

    def key(out) -> str:
        return " ".join(map(str, out)) if isinstance(out, tuple) else str(out)

    def rows(items) -> list:
        return [{"output": key(o), "traced": ff(a), "expected": ff(b)} for o, a, b in items[:50]]

    return {"verdict": result.verdict, "tv": ff(result.tv), "tv_from_float_ideal": ff(result.tv_from_float_ideal),
            "arithmetic": result.arithmetic, "gamma": result.gamma, "outside_support": ff(result.outside_support),
            "law": {key(o): ff(m) for o, m in result.law.items()}, "differing": rows(result.differing),
            "member_differing": rows(result.member_differing), "runs": result.trace.runs,
            "assumptions": list(result.trace.assumptions), "caveats": list(result.caveats)}


def _trace_python(args: argparse.Namespace) -> int:
    from . import testing

    func = _load_function(args.function)
    if args.max_runs < 1:
        raise _Usage("--max-runs must be >= 1")
    if args.array == "numpy" and args.dtype == "bfloat16":
        raise _Usage("NumPy has no bfloat16: use --array torch")
    if args.array == "torch":
        try:
            import torch  # noqa: F401
        except ImportError:
            raise _Usage("--array torch needs torch (the 'models' extra); or pass --array numpy") from None
    name = f"{args.function} on {args.dtype} {'tensors' if args.array == 'torch' else 'arrays'}"
    if args.search:
        if args.target or args.draft or args.reference:
            raise _Usage("--search tries its own rows against the target: give no --target, --draft or --reference")
        if args.max_vocab < 2 or args.max_denominator < 1:
            raise _Usage("--max-vocab must be >= 2 and --max-denominator >= 1")
        import time

        desc = f"V 2..{args.max_vocab}, denominators 1..{args.max_denominator}"
        started, tried = time.monotonic(), [0]

        def step(n: int) -> None:
            tried[0] += n
            bar.update(n)

        with tqdm(unit="pair", file=sys.stderr, disable=None, desc=f"search {desc}") as bar:
            found = testing.search_lossy(func, gamma=args.gamma, dtype=args.dtype, array=args.array,
                                         max_vocab=args.max_vocab, max_denominator=args.max_denominator,
                                         numpy_rng=args.numpy_rng, max_runs=args.max_runs, progress=step)
        from .rational import format_fraction as ff

        text = lambda x: str(x.numerator) if x.denominator == 1 else ff(x)  # noqa: E731 - never 0/1 or 1/1
        if found is None:
            out = {"command": "trace", "function": args.function, "search": None, "pairs": tried[0],
                   "max_vocab": args.max_vocab, "max_denominator": args.max_denominator}
            print(json.dumps(out, indent=2) if args.json else
                  f"{name}: no lossy input among {tried[0]} pairs ({desc}, {args.dtype} rows"
                  + (f", gamma {args.gamma}" if args.gamma else "") + f"; {time.monotonic() - started:.1f} s)")
            return 0
        if found.comparison is None:
            where = f"p = ({', '.join(map(text, found.p))}), q = ({', '.join(map(text, found.q))})"
            if args.json:
                _print_json({"command": "trace", "function": args.function, "search": {
                    "p": [ff(x) for x in found.p], "q": [ff(x) for x in found.q], "pairs": found.pairs,
                    "raised": found.raised}})
            else:
                print(f"{name}: the sampler raised on valid rows (pair {found.pairs} of the search): {where}\n"
                      f"  {found.raised}")
            return 1
        if args.json:
            _print_json({"command": "trace", "function": args.function, "search": {
                "p": [ff(x) for x in found.p], "q": [ff(x) for x in found.q], "pairs": found.pairs,
                **_comparison_json(found.comparison)}})
        else:
            print(f"{name}: smallest lossy input (pair {found.pairs} of the search): p = ({', '.join(map(text, found.p))}), "
                  f"q = ({', '.join(map(text, found.q))})")
            print(found.comparison.report())
        return 1
    if not args.target or not args.draft:
        raise _Usage("give --target P and --draft Q (or --search)")
    make = testing._row_maker(args.array, args.dtype)
    rows = []
    for path, what in ((args.target, "p"), (args.draft, "q")):
        dist = load_distributions(path, what)
        vals = [[float(x) for x in v.fractions()] for v in dist.vectors] if dist.floats is None else \
            [[float(x) for x in f] for f in dist.floats]
        rows.append(make(vals if dist.batched else vals[0]))
    target, draft = rows
    plain = None if args.reference is None else _load_function(args.reference)
    result = testing.compare(func, target, draft, gamma=args.gamma, numpy_rng=args.numpy_rng, max_runs=args.max_runs,
                             progress=True, reference=plain)
    if args.json:
        _print_json({"command": "trace", "function": args.function, "dtype": args.dtype, **_comparison_json(result)})
    else:
        print(f"{name}, V {target.shape[-1]}" + (f", gamma {result.gamma}" if result.gamma else ", one position"))
        print(result.report())
    if result.verdict == "lossless" or (result.verdict == "float-faithful" and not args.strict):
        return 0
    return 1


def _trace(args: argparse.Namespace) -> int:
    if args.library == "python":
        return _trace_python(args)
    try:
        from .adapters import transformers as hf
    except ImportError as exc:  # pragma: no cover - the models extra is missing
        raise _Usage(f"specproof trace transformers needs torch and transformers (the 'models' extra): {exc}")
    t = hf.read_logits(args.target_logits, "--target-logits")
    d = hf.read_logits(args.draft_logits, "--draft-logits")
    if args.gamma is not None and (args.gamma < 1 or d.shape[0] != args.gamma or t.shape[0] != args.gamma + 1):
        raise _Usage(f"--gamma {args.gamma} needs [gamma + 1, V] target and [gamma, V] draft logits; got "
                     f"{list(t.shape)} and {list(d.shape)}")
    try:
        result = hf.block_law(t, d, ensemble_weight=args.ensemble_weight, dtype=args.dtype)
    except ImportError as exc:  # pragma: no cover
        raise _Usage(f"specproof trace transformers needs torch and transformers: {exc}")
    out = result.as_dict()
    if args.json:
        _print_json({"command": "trace", "library": "transformers", **out})
    else:
        ver = result.versions
        print(f"transformers {ver['transformers']} (torch {ver['torch']}) _speculative_sampling, gamma "
              f"{result.gamma}, V {result.vocab_size}" + (f", ensemble weight {result.ensemble_weight}"
                                                         if result.ensemble_weight is not None else "")
              + f": {out['verdict'].upper()}")
        print(f"  TV of the first gamma + 1 tokens from the target's joint law: {out['tv']} (~{float(result.tv):.3g})")
        print(f"  accepted-length law: {', '.join(out['accepted_length'])}")
        print(f"  {len(result.law)} possible blocks; {result.runs} runs of the sampler")
        top = sorted(result.law.items(), key=lambda kv: -kv[1])[:10]
        for block, mass in top:
            print(f"    {' '.join(map(str, block)):<20} {format_fraction(mass)}")
        if len(result.law) > 10:
            print("    ... (see --json for the whole law)")
        print("  assumptions:")
        for a in result.assumptions:
            print(f"    - {a}")
    return 0 if result.lossless else 1


_COMMANDS["trace"] = _trace


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 rejected, 2 usage/bad input)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 0 on --help and --version
        return int(exc.code or 0)
    except _ParseError as exc:
        print(exc, file=sys.stderr)
        words = list(sys.argv[1:] if argv is None else argv)
        if "--json" in words:
            command = next((w for w in words if w in _COMMANDS), None)
            _print_json({"command": command, "error": str(exc)})
        return 2
    try:
        code = _COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:
        return _broken_pipe()
    except _Usage as exc:
        return _error(args, str(exc))
    except (SpecProofError, OSError) as exc:  # bad input, or a file that cannot be read or written
        return _error(args, str(exc))
    except ValueError as exc:  # e.g. numbers beyond Python's int/str conversion limit
        return _error(args, f"{exc!s:.300}")


def _error(args: argparse.Namespace, message: str) -> int:
    """Report a usage or input error (exit 2); with --json also as the one object on stdout."""
    print(f"specproof {args.command}: error: {_terminal(message)}", file=sys.stderr)
    if getattr(args, "json", False):
        try:
            _print_json({"command": args.command, "error": message})
            sys.stdout.flush()
        except BrokenPipeError:
            return _broken_pipe()
    return 2


def _broken_pipe() -> int:
    """The reader of standard output went away (``specproof fixtures | head``): stop quietly.

    Python's documented recipe: point standard output at ``os.devnull`` so that the flush at
    interpreter exit does not fail again, and exit with a status that says so.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured)
        pass
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
