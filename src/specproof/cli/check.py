"""``specproof check``: re-verify a certificate with the trusted checker alone, and bind it to inputs."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from specproof import checker
from specproof.cli._common import _bar, _check_atol, _json_option, _print_json, _say, _Usage
from specproof.cli.record import _is_record, refuse_record

#: laws.rational.DEFAULT_FLOAT_ATOL, written out so that check's start loads no NumPy (a test keeps them equal).
_DEFAULT_ATOL = 1e-3


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand to ``sub``."""
    ck = sub.add_parser(
        "check",
        help="re-verify a certificate with the trusted checker alone",
        description="Re-verify a certificate or bundle with the trusted checker alone "
        "(a symbolic-proof record is checked for shape, then by re-running the SymPy proof). "
        "A valid outcome or block certificate's verdict (LOSSLESS or LOSSY) is printed with its "
        "reference law. Exit 0 valid (with --require-lossless: valid and lossless), 1 rejected "
        "(the reason is printed), 2 unreadable.",
    )
    ck.add_argument("certificate", metavar="CERT.json")
    ck.add_argument(
        "--target",
        metavar="P",
        help="also confirm that the certificate's p is exactly this file's "
        "values made exact (the file formats of prove; a [N, V] file binds a bundle row by row); an "
        "outcome or block certificate is compared on the input rows its tree reads, and the output "
        "names the rows compared, those not read, and those read but bound to nothing",
    )
    ck.add_argument("--draft", metavar="Q", help="the same for q (give --target and --draft together)")
    ck.add_argument(
        "--atol",
        type=float,
        default=None,
        help=f"tolerance on the float sums of --target/--draft, in (0, 1) (default {_DEFAULT_ATOL})",
    )
    ck.add_argument(
        "--require-lossless",
        action="store_true",
        help="exit 1 also for a valid certificate unless its certified law is exactly p: the target row "
        "bound to --target (without --target, the certificate's own input p, and the output says so); "
        "a verifier that is lossy, a reference other than p (a given row, the argmax of p), and a "
        "verdict that depends on a stated value (a constant threshold, a stated float sum, a given "
        "row the tree reads) or on a row bound to nothing fail it (for CI: a valid certificate of a "
        "lossy verifier otherwise exits 0)",
    )
    _json_option(ck)


def _read_once(path: str) -> tuple[checker.Json, checker.Verdict | None]:
    """Read ``path`` once and parse it the checker's way: (document, None), or (None, the
    rejection) when it cannot be read or is not valid JSON. Everything after works on these
    bytes only, so what is checked is what is rendered."""
    try:
        return checker.parse(checker.read(path)), None
    except checker.Rejection as rejection:
        return None, checker.Verdict(False, rejection.reason, rejection.detail)


def _verdict_json(verdict: checker.Verdict) -> dict[str, Any]:
    return {
        "valid": verdict.valid,
        "reason": None if verdict.reason is None else verdict.reason.value,
        "detail": verdict.detail,
        "checker_version": checker.VERSION,
    }


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


def _reference_of(facts: dict[str, Any]) -> str:
    """The law a certificate's verdict is measured against, in words."""
    if facts["schema"] == checker.OUTCOME_SCHEMA:
        return facts["reference_source"]
    if facts["schema"] in (checker.BLOCK_SCHEMA, checker.CHAIN_SCHEMA):
        return "p (the target's joint law of the stream)"
    return "p"


def _tv_of(facts: dict[str, Any]) -> Fraction:
    if facts["schema"] == checker.BLOCK_SCHEMA:
        return facts["stream_tv"]
    return Fraction(facts["totals"]["tv"].num, facts["totals"]["tv"].den)


def _print_verdict_json(
    args: argparse.Namespace,
    verdict: checker.Verdict,
    trees: list,
    lossless: list[bool],
    tvs: list[Fraction],
    binding: dict[str, Any],
    failures: list[str],
) -> None:
    """Prints ``check --json``: the verdict, its binding to --target/--draft, each certified law's TV and reference
    (outcome and block certificates), and what --require-lossless decided."""
    from specproof.report import transcript  # where used: NumPy and Jinja stay out of check's start

    bind = (
        {}
        if args.target is None
        else {
            "bound_to_inputs": verdict.valid and not binding.get("unbound", True),
            "bound_rows": binding.get("bound", []),
            "unbound_rows": binding.get("unbound", []),
            "unread_inputs": binding.get("unread", []),
            "read_outside_checker": binding.get("outside", []),
        }
    )
    result = (
        {
            "lossless": lossless,
            "tv": [transcript.exact_text(x) for x in tvs],
            "tv_approx": [transcript.show(x) for x in tvs],
            "reference": [_reference_of(f) for f in trees],
            "stated_values": [list(f.get("stated", [])) for f in trees],
            "sum_orders": [
                [f"{name}: {row} summed {order} ({fmt})" for name, row, fmt, order in f.get("sums", [])] for f in trees
            ],
        }
        if trees
        else {}
    )
    required = (
        {
            "required_lossless": verdict.valid and not failures,
            "required_lossless_against": "p bound to --target"
            if args.target is not None
            else "the certificate's own input p (no --target: not bound to a file)",
            "required_lossless_failures": failures if verdict.valid else [],
        }
        if args.require_lossless
        else {}
    )
    _print_check_json(
        {"command": "check", "file": args.certificate, **_verdict_json(verdict), **bind, **result, **required}
    )


def _say_valid(
    args: argparse.Namespace,
    verdict: checker.Verdict,
    trees: list,
    lossless: list[bool],
    tvs: list[Fraction],
    failures: list[str],
) -> None:
    """Says a valid verdict: what it trusts as stated, the float sums it re-derived, whether the certified verifier is
    LOSSLESS or LOSSY (and against which reference), and what --require-lossless decided."""
    _say(f"{args.certificate}: valid ({verdict.detail})")
    given = sorted({g for f in trees for g in f["given"]})
    stated = [s for f in trees for s in f.get("stated", [])]
    if given:
        _say(
            f"  trusted as stated (given rows, not re-derived): {', '.join(given[:10])}"
            + (f" and {len(given) - 10} more" if len(given) > 10 else "")
        )
    if stated:
        _say(
            f"  stated, not re-derived (the verdict depends on them): {len(stated)} value(s): "
            + "; ".join(stated[:3])
            + (f"; and {len(stated) - 3} more" if len(stated) > 3 else "")
        )
    sums = sorted(
        {f"{name} ({row} summed {order}, {fmt})" for f in trees for name, row, fmt, order in f.get("sums", [])}
    )
    if sums:
        _say(
            "  float sums re-derived in the order the certificate names (which order the code uses is a "
            "modelling assumption): " + "; ".join(sums[:3]) + (f"; and {len(sums) - 3} more" if len(sums) > 3 else "")
        )
    if trees:  # what the certified law says (an outcome or block certificate may prove a verifier lossy)
        lossy = [i for i, ok in enumerate(lossless) if not ok]
        refs = sorted({_reference_of(f) for f in trees})
        against = "reference: " + (
            ", ".join(refs) if len(refs) <= 3 else f"{', '.join(refs[:3])} and {len(refs) - 3} more"
        )
        if not lossy:
            _say(f"  the certified verifier is LOSSLESS ({against})")
        else:
            first = trees[lossy[0]]
            stream = "stream " if first["schema"] == checker.BLOCK_SCHEMA else ""
            at = f", at {len(lossy)} of {len(lossless)} positions" if len(lossless) > 1 else ""
            from specproof.report import transcript

            _say(
                f"  the certified verifier is LOSSY (exact {stream}TV {transcript.number_text(tvs[lossy[0]])}{at}; "
                f"reference: {_reference_of(first)})"
            )
    if args.require_lossless and failures:
        _say(
            "  --require-lossless: failed (exit 1): "
            + "; ".join(failures[:4])
            + (f"; and {len(failures) - 4} more" if len(failures) > 4 else "")
        )
    elif args.require_lossless:
        _say(
            "  --require-lossless: passed: the certified law is exactly "
            + (
                "p, bound to --target"
                if args.target is not None
                else "the certificate's own input p (no --target given: p is not bound to a file)"
            )
        )


def run(args: argparse.Namespace) -> int:
    doc, verdict = _read_once(args.certificate)
    if verdict is None and _is_record(doc):  # SymPy's proof, not a certificate: not the kernel's to check
        return refuse_record(args.certificate, doc, as_json=args.json)
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
    trees = (
        [f for f in verdict.facts if f.get("schema") in (checker.OUTCOME_SCHEMA, checker.BLOCK_SCHEMA)]
        if verdict.valid
        else []
    )
    lossless = [bool(f["claims"]["lossless"]) for f in trees]
    tvs = [_tv_of(f) for f in trees]
    failures = (
        checker.gate(verdict.facts, binding if args.target is not None else None) if verdict.valid else ["not valid"]
    )
    if args.require_lossless and failures:
        code = 1
    if args.json:
        _print_verdict_json(args, verdict, trees, lossless, tvs, binding, failures)
    elif verdict.valid:
        _say_valid(args, verdict, trees, lossless, tvs, failures)
    else:
        assert verdict.reason is not None  # an invalid verdict names its reason
        _say(f"{args.certificate}: REJECTED ({verdict.reason.value}): {verdict.detail}")
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
        note += f" (at each of the {len(bound)} rows compared: {', '.join(bound[:4])}" + (
            " ...)" if len(bound) > 4 else ")"
        )
    if binding["unread"] and bound:
        note += f" ({' and '.join(binding['unread'])} not read by the certified tree)"
    if binding.get("outside"):
        note += (
            f"; {' and '.join(binding['outside'])} read by NumPy (specproof.cli.loaders), outside the trusted "
            "checker (JSON files are read by the checker)"
        )
    if binding["unbound"]:
        names = binding["unbound"]
        note += f"; read by the tree but bound to nothing (the certificate's own values): {', '.join(names[:10])}" + (
            f" and {len(names) - 10} more" if len(names) > 10 else ""
        )
    return note


def _bind(verdict: checker.Verdict, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """("", what was compared) if every row the checker re-derived from an input that the certificate reads
    equals --target's or --draft's row made exact, else (why not, {}): the kernel's
    :func:`specproof.checker.bind`. JSON files are read by the kernel (:func:`specproof.checker.input_rows`,
    the standard library alone); other formats (.npy, .safetensors, .pt, CSV, text) by
    :mod:`specproof.cli.loaders` with NumPy, outside the trusted checker, and the binding says so
    (``outside``: the options read there)."""
    _check_atol(args.atol)
    atol = _DEFAULT_ATOL if args.atol is None else args.atol
    rows = []
    outside = []
    for option, path, name in (("--target", args.target, "p"), ("--draft", args.draft, "q")):
        if str(path).lower().endswith(".json"):
            try:
                rows.append(checker.input_rows(checker.read(path), f"{option} ({path})", Fraction(atol)))
            except checker.Rejection as rejection:  # a bad input file, as the loaders' errors
                raise _Usage(rejection.detail) from None
        else:
            from specproof.cli.loaders import load_distributions  # NumPy: only for the formats JSON is not

            loaded = load_distributions(path, name, atol=atol, atol_name="--atol")
            exact = []
            for v in loaded.vectors:
                assert v is not None  # degenerate rows are refused, not kept (no keep_degenerate)
                exact.append(v.fractions())
            rows.append(exact)
            outside.append(option)
    failure, binding = checker.bind(verdict.facts, rows[0], rows[1])
    return (failure, {}) if failure else ("", {**binding, "outside": outside})
