"""``specproof prove``: every theorem on the embedded inputs, or one pair from files."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from specproof import checker, theorems
from specproof.certify import certificate
from specproof.cli._common import _bar, _check_atol, _float_rows, _json_option, _pairs, _print_json, _say, _Usage
from specproof.cli.check import _read_once, _verdict_json, _verify
from specproof.cli.loaders import Distributions, load_distributions
from specproof.laws.rational import DEFAULT_FLOAT_ATOL, format_fraction
from specproof.report import transcript


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``prove`` subcommand to ``sub``."""
    pr = sub.add_parser(
        "prove",
        help="prove every theorem on the embedded inputs, or one pair from files",
        description="With no --target/--draft: run every proof ("
        + "; ".join(title for title, _ in theorems.THEOREMS.values())
        + "), write JSON certificates and Markdown transcripts into --out and print a summary. With --target and "
        "--draft: prove that pair (files: .json, .csv (one row or column), .npy, .safetensors, .pt, or text "
        "with one value per line; an [N, V] array gives N pairs in one bundle, row i with row i, and a one-row file "
        "pairs with every row of the other (said on the result); a vector with any decimal "
        "number is a float vector, made exact by the dyadic-renormalize policy, which the transcript "
        "records). Exit 0 iff everything is proved.",
    )
    pr.add_argument(
        "--record",
        metavar="RECORD.json",
        help="re-check a proof record (the SymPy proof for every V, as proofs/transcripts/symbolic_every_v.json): "
        "re-run the proof and compare; exit 0 iff the record is what a fresh run proves",
    )
    pr.add_argument("--target", metavar="P", help="file with the target distribution p (or an [N, V] stack)")
    pr.add_argument("--draft", metavar="Q", help="file with the draft distribution q (or an [N, V] stack)")
    pr.add_argument("--out", metavar="DIR", default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    pr.add_argument(
        "--name",
        default="pair",
        help="name of the certificate for --target/--draft, a plain file name without path "
        "separators or '..' (default 'pair')",
    )
    pr.add_argument(
        "--atol",
        type=float,
        default=None,
        help="largest accepted |sum - 1| of a float row before exact renormalization, in (0, 1) "
        f"(default {DEFAULT_FLOAT_ATOL:g})",
    )
    pr.add_argument(
        "--certificate",
        choices=("auto", "full", "compact"),
        default="auto",
        help="full: every token's row as exact 'n/d' text; compact: p and q as float64 bit patterns "
        "and the rows that matter (float inputs only; much smaller and faster at large V); "
        f"auto (default): compact for float inputs with V > {COMPACT_ABOVE}, else full",
    )
    pr.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="with no --target/--draft: prove the theorems in N worker processes (default: 2, or 1 "
        "on a one-core machine; 1 runs everything in this process); the files written are the same",
    )
    pr.add_argument(
        "--no-coq",
        dest="coq",
        action="store_false",
        help="with no --target/--draft: do not compile the Coq proofs (proofs/coq). By default the "
        "'lossless for every V' theorem compiles them where coqc is on PATH (it says so on "
        "standard error first, and reports the time taken)",
    )
    pr.add_argument(
        "--coq",
        dest="coq_file",
        action="store_true",
        help="with --target/--draft: also write NAME.v, the certificate's law, alpha, TV and claims "
        "stated about the Coq model (proofs/coq/Spec.v) and proved by computation "
        "(proofs/coq/Certify.v), and compile it with coqc where coqc is on PATH (exit 1 if "
        "coqc rejects it); needs a full certificate (--certificate auto or full)",
    )
    _json_option(pr)


DEFAULT_OUT = "specproof-transcripts"
#: ``prove --certificate auto`` writes a compact certificate for float inputs with V above this.
COMPACT_ABOVE = 1024


def _table(outcomes: list[theorems.Outcome]) -> str:
    head = ("theorem", "instances", "verdict", "seconds", "transcript")
    rows = [
        (o.title, str(o.instances), "PROVED" if o.proved else "NOT PROVED", f"{o.seconds:.1f}", str(o.md_path))
        for o in outcomes
    ]
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

        from specproof.trace.adapters.transformers import edge_cases, speculative_sampling_law
    except ImportError as exc:
        return {"library": "transformers", "skipped": f"not installed ({exc.name}); the 'models' extra has it"}
    cases = edge_cases()
    rows = []
    for key in _EXACT_EDGE_CASES if inputs is None else inputs:
        law = speculative_sampling_law(*cases[key][:2])
        rows.append({"input": key, "verdict": law.verdict, "tv": format_fraction(law.tv)})
    return {
        "library": "transformers",
        "version": transformers.__version__,
        "function": "transformers.generation.utils._speculative_sampling",
        "vocab_size": 4,
        "gamma": 2,
        "cases": rows,
    }


def _findings_text(findings: dict[str, Any]) -> str:
    if "skipped" in findings:
        return f"Measured finding about {findings['library']}: skipped, {findings['skipped']}."
    lines = [
        f"Measured (traced by specproof.trace.tracer, not a theorem): {findings['library']} {findings['version']} "
        f"{findings['function']}, V = {findings['vocab_size']}, gamma = {findings['gamma']}; exact TV of the "
        "first gamma + 1 output tokens from the target's joint law:"
    ]
    lines += [f"  {c['input']}: {c['verdict']}, TV {c['tv']}" for c in findings["cases"]]
    return "\n".join(lines)


_FINDINGS = "findings"  # the task name of the measured finding beside the theorems


def _jobs(jobs: int | None) -> int:
    if jobs is None:
        return min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if jobs < 1:
        raise _Usage(f"--jobs must be at least 1, got {jobs}")
    return jobs


def _prove_theorems(out: Path, jobs: int, coq: bool = True) -> tuple[list[theorems.Outcome], dict[str, Any]]:
    """Every theorem and the measured finding, in ``jobs`` processes (theorems.run_parallel); one
    progress line each on standard error as it finishes; the outcomes in :data:`theorems.THEOREMS`
    order. ``coq``: the symbolic theorem also compiles the Coq proofs where coqc is on PATH (said
    first, on standard error)."""
    prove = theorems.prove if coq else theorems.prove_without_coq
    tasks: dict[str, tuple[Callable[..., Any], tuple]] = {key: (prove, (key, out)) for key in theorems.THEOREMS}
    tasks[_FINDINGS] = (_timed_findings, (tuple(_EXACT_EDGE_CASES),))
    print(
        f"proving {len(theorems.THEOREMS)} theorems and measuring 1 finding in {min(jobs, len(tasks))} "
        f"process(es); one line each as it finishes:",
        file=sys.stderr,
        flush=True,
    )
    if coq and "symbolic_every_v" in tasks and shutil.which("coqc"):
        print(
            f"coqc is on PATH: '{theorems.THEOREMS['symbolic_every_v'][0]}' also compiles the Coq proofs in "
            "proofs/coq (35 s of make on two quiet cores, up to a minute under load, December 2026; its time is reported when done; --no-coq skips them)",
            file=sys.stderr,
            flush=True,
        )
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


def _prove_embedded(args: argparse.Namespace, out: Path) -> int:
    """``prove`` with no --target/--draft: the embedded theorems proved, reported with the measured findings; the exit
    code (0: every theorem proved)."""
    outcomes, findings = _prove_theorems(out, _jobs(args.jobs), args.coq)
    proved = all(o.proved for o in outcomes)
    if args.json:
        _print_json(
            {
                "command": "prove",
                "proved": proved,
                "theorems": [
                    {
                        "theorem": o.theorem,
                        "title": o.title,
                        "instances": o.instances,
                        "proved": o.proved,
                        "certificate": str(o.json_path),
                        "transcript": str(o.md_path),
                        "detail": o.detail,
                        "seconds": round(o.seconds, 3),
                        **({"formal": o.formal} if o.formal else {}),
                    }
                    for o in outcomes
                ],
                "findings": findings,
            }
        )
    else:
        print(_table(outcomes))
        print(f"{sum(o.proved for o in outcomes)} of {len(outcomes)} theorems proved")
        for o in (o for o in outcomes if o.formal):  # the symbolic theorem's Coq check, or "not run"
            print(f"{o.title}: {o.formal}")
        print(_findings_text(findings))
    return 0 if proved else 1


def _report_proved(
    args: argparse.Namespace,
    certs: list[dict[str, Any]],
    form: str,
    json_path: Path,
    md_path: Path,
    verdict: checker.Verdict,
    pairing: str | None,
    coq_result: dict[str, Any] | None,
) -> None:
    """Prints what ``prove --target/--draft`` proved: the checker's verdict on the certificate written, V and alpha,
    the files written, and coqc's result (--coq); as JSON with --json."""
    alphas = [Fraction(*transcript._parts(c["totals"]["alpha"])) for c in certs]
    if args.json:
        _print_json(
            {
                "command": "prove",
                "name": args.name,
                "proved": verdict.valid,
                "vocab_size": certs[0]["vocab_size"],
                "pairs": len(certs),
                "form": form,
                "certificate": str(json_path),
                "transcript": str(md_path),
                "checker": _verdict_json(verdict),
                **({"pairing": pairing} if pairing else {}),
                **({"coq": coq_result} if coq_result else {}),
                "instances": [
                    {"name": c["name"], "alpha": c["totals"]["alpha"], "tv": c["totals"]["tv"], **c["claims"]}
                    for c in certs
                ],
            }
        )
    else:
        what = f"V = {certs[0]['vocab_size']}"
        if len(certs) > 1:
            what = f"{len(certs)} pairs, {what}, alpha from {transcript.show(min(alphas))} to {transcript.show(max(alphas))}"
        else:
            what += f", alpha = {transcript.show(alphas[0])}"
        print(
            f"{args.name}: {'PROVED' if verdict.valid else 'NOT PROVED'} ({what}); {verdict.detail} ({form} certificate)"
        )
        if pairing:
            print(f"  {pairing}")
        print(f"  {json_path}\n  {md_path}")
        if coq_result:
            print(f"  {coq_result['file']}: {coq_result['summary']}")


def run(args: argparse.Namespace) -> int:
    if args.record is not None:
        return _prove_record(args)
    out = Path(args.out)
    _check_atol(args.atol)
    if args.target is None and args.draft is None:
        return _prove_embedded(args, out)
    if args.target is None or args.draft is None:
        raise _Usage("--target and --draft go together")
    if args.jobs is not None:
        raise _Usage("--jobs applies to the embedded theorems (no --target/--draft)")
    if args.coq_file and args.certificate == "compact":
        raise _Usage("--coq transcribes full certificates (every token's row as 'n/d'); use --certificate full or auto")
    _check_name(args.name)
    atol = DEFAULT_FLOAT_ATOL if args.atol is None else args.atol
    target = load_distributions(args.target, "p", atol=atol, atol_name="--atol")
    draft = load_distributions(args.draft, "q", atol=atol, atol_name="--atol")
    form = "full" if args.coq_file else _form(args.certificate, target, draft)
    pairs = _pairs(target, draft, form)
    pairing = _one_row_for_all(len(target.vectors), len(draft.vectors))
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
        doc = (
            certs[0]
            if len(certs) == 1 and not (target.batched or draft.batched)
            else certificate.build_bundle(
                certs,
                name=args.name,
                statement=_BUNDLE_STATEMENT + certificate.STATEMENT,
                provenance={"target": target.provenance, "draft": draft.provenance},
            )
        )
        json_path = certificate.write(doc, out / f"{args.name}.json")
        written, verdict = _read_once(str(json_path))  # check and render what was written, read once
        bar.set_description("checking")
        verdict = verdict or _verify(written, bar)
        bar.set_description("transcript")
        md_path = out / f"{args.name}.md"
        md_path.write_text(
            transcript.render(written, verdict, json_name=json_path.name), encoding="utf-8", newline="\n"
        )
        bar.update(1)
    coq_result = _coq_check(written, out, args.name) if args.coq_file else None
    _report_proved(args, certs, form, json_path, md_path, verdict, pairing, coq_result)
    coq_ok = coq_result is None or coq_result["checked"] is not False
    return 0 if verdict.valid and coq_ok else 1


def _coq_check(doc: Any, out: Path, name: str) -> dict[str, Any]:
    """Write the certificate as NAME.v (NAME made a Coq identifier) and compile it with coqc where
    coqc is on PATH: ``checked`` is True (coqc proved it), False (coqc rejected it) or None (not run)."""
    import re

    from specproof.certify import coq

    stem = re.sub(r"[^A-Za-z0-9_]", "_", name)
    stem = stem if re.match(r"[A-Za-z_]", stem) else f"c_{stem}"
    path = coq.write_v(doc, out / f"{stem}.v")
    if shutil.which("coqc") is None:
        return {
            "file": str(path),
            "checked": None,
            "seconds": None,
            "summary": "written; not checked (coqc is not on PATH; Coq 8.16 with MathComp compiles it)",
        }
    print(
        f"compiling {path} with coqc (about 5 s per certificate of 41 tokens, plus 10 s for Certify.v)",
        file=sys.stderr,
        flush=True,
    )
    result = coq.compile_files([path])[0]
    summary = (
        f"proved by coqc in {result['seconds']:.1f} s"
        if result["ok"]
        else f"REJECTED by coqc: {result['output'].strip()[-600:]}"
    )
    return {"file": str(path), "checked": result["ok"], "seconds": round(result["seconds"], 3), "summary": summary}


_BUNDLE_STATEMENT = (
    "For each row of the target file and the same row of the draft file (a single row pairs with every row): "
)


def _one_row_for_all(n: int, m: int) -> str | None:
    """What a one-row file paired with an N-row file did (None when the rows pair one to one): the one row
    was used for every row of the other file, as the docs state; said, so that it is not a silent broadcast."""
    if n == m:
        return None
    one, other, many, flag = ("draft", "target", n, "--draft") if m == 1 else ("target", "draft", m, "--target")
    return (
        f"the one {one} row was used for every one of the {many} {other} rows ({many} pairs); for a different "
        f"{one} row in each pair, give {flag} {many} rows ([{many}, V])"
    )


def _check_name(name: str) -> None:
    """A certificate's name becomes a file name in --out: no path may hide in it."""
    seps = {sep for sep in ("/", "\\", os.sep, os.altsep) if sep is not None}
    if not name or ".." in name or any(sep in name for sep in seps) or "\0" in name:
        raise _Usage(f"--name must be a plain file name without path separators or '..', got {name!r}")


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
    raise _Usage(
        "--certificate compact stores p and q as float64 bit patterns, but an input has exact "
        "'n/d' values no float64 holds; use --certificate full (or auto)"
    )


def _prove_record(args: argparse.Namespace) -> int:
    """``prove --record FILE``: re-run the proof a record states and compare (exit 0 iff equal and proved)."""
    from specproof.cli.record import _check_record, _is_record

    if args.target is not None or args.draft is not None:
        raise _Usage("--record re-checks a record; it takes no --target or --draft")
    doc, rejection = _read_once(args.record)
    if rejection is not None:
        assert rejection.reason is not None  # a rejection names its reason
        _say(f"{args.record}: REJECTED ({rejection.reason.value}): {rejection.detail}")
        return 2 if rejection.reason is checker.Reason.UNREADABLE else 1
    if not _is_record(doc):
        raise _Usage(f"{args.record} is not a proof record; check a certificate with `specproof check`")
    return _check_record(args.record, doc, as_json=args.json)
