"""``specproof trace``: the exact law of a library's verifier or of your own sampler, traced."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

from specproof.cli._common import _bar, _print_json, _Usage
from specproof.cli.loaders import load_distributions
from specproof.laws.rational import format_fraction

# --------------------------------------------------------------------------- trace (issue 12)


#: Largest V `trace python --search` tries (the Python API has no such limit).
MAX_SEARCH_VOCAB = 16


def add_parser(sub: argparse._SubParsersAction) -> None:
    tc = sub.add_parser(
        "trace",
        help="the exact law of a real library's speculative sampler, by controlled re-execution",
        description="Run a library's verifier under specproof.trace.tracer (every random number supplied by specproof) "
        "and print the exact law of the emitted block, its exact TV from the target's joint law and a verdict "
        "(lossless, float-faithful or lossy; undecided where a small TV could not be argued a float floor). Exit 0 "
        "lossless or float-faithful, 1 lossy or undecided (--strict: float-faithful too), 2 usage or bad input.",
    )
    lib = tc.add_subparsers(dest="library", required=True, metavar="LIBRARY")
    hf = lib.add_parser(
        "transformers",
        help="transformers.generation.utils._speculative_sampling (needs torch and transformers)",
        description="Trace Hugging Face transformers' _speculative_sampling: gamma drafts drawn from the draft "
        "logits, then verified by the function (batch 1). T: [gamma + 1, V] target logits, D: [gamma, V] draft "
        'logits, .json (rows of numbers, -Infinity or "-inf" allowed) or .npy. Verdicts as `trace python`: '
        "float-faithful is the law of a correct float implementation on the same float rows (its TV is the float "
        "floor). Exit 0 lossless or float-faithful, 1 lossy (--strict: float-faithful too), 2 usage.",
    )
    hf.add_argument("--target-logits", metavar="T", required=True, help="target logits [gamma + 1, V]")
    hf.add_argument("--draft-logits", metavar="D", required=True, help="draft logits [gamma, V]")
    hf.add_argument(
        "--gamma", type=int, metavar="G", help="drafts per block (default: the rows of D); must fit T and D"
    )
    hf.add_argument(
        "--ensemble-weight",
        type=float,
        metavar="W",
        help="transformers' assistant_ensemble_weight in (0, 1] (default: none, the standard verifier)",
    )
    hf.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default="float32",
        help="dtype of the logits tensors (default float32, as models emit)",
    )
    hf.add_argument("--strict", action="store_true", help="exit 1 on float-faithful too (only lossless passes)")
    hf.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: verdict, tv, tv_from_float_ideal, arithmetic ('n/d'), law, ...",
    )
    py = lib.add_parser(
        "python",
        help="your own sampler: MODULE:FUNCTION, called as FUNCTION(target, draft)",
        description="Trace your own verifier, FUNCTION(target, draft) from MODULE (an importable module, or a "
        "path to a .py file), on the rows of P and Q (the formats of `prove`; [V] for one position, [gamma + 1, V] "
        "and [gamma, V] for a block) given as tensors (or arrays) of --dtype. Prints the verdict: lossless (the "
        "target's law exactly), float-faithful (exactly a correct float implementation: its TV from p is the float "
        "floor; or, for code outside the family and with --reference, the same code re-traced on the rows' laws in "
        "float64, its TV falling with the unit roundoff), lossy, or undecided (a small TV that could not be argued "
        "either way), the exact TVs and the argument used. Exit 0 lossless or float-faithful (--strict: "
        "lossless only), 1 lossy or undecided, 2 usage or bad input. A degenerate row (NaN, inf, all zeros) is "
        "the sampler's input, not bad input to this command: the sampler refusing it (REFUSED, no token "
        "emitted) exits 0, as refusing is right; emitting tokens from it is judged.",
    )
    py.add_argument("function", metavar="MODULE:FUNCTION", help="e.g. mysampler:verify or path/to/file.py:verify")
    py.add_argument("--target", metavar="P", help="target rows: [V] or [gamma + 1, V]")
    py.add_argument("--draft", metavar="Q", help="draft rows: [V] or [gamma, V]")
    py.add_argument("--gamma", type=int, metavar="G", help="drafts per block (default: from the rows' shapes)")
    py.add_argument(
        "--dtype",
        choices=("float16", "bfloat16", "float32", "float64"),
        default=None,
        help="dtype of the rows given to the sampler (default: a .npy, .safetensors or .pt file's own "
        "float dtype, else float32); entries rounded to nearest",
    )
    py.add_argument(
        "--array",
        choices=("torch", "numpy"),
        default="torch",
        help="give the rows as torch tensors (default) or NumPy arrays",
    )
    py.add_argument(
        "--numpy-rng", metavar="NAME", help="also pass a traced numpy.random.Generator as the keyword argument NAME"
    )
    py.add_argument(
        "--max-runs", type=int, default=200_000, metavar="N", help="most runs of the sampler (default 200,000)"
    )
    py.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a time budget for the trace; past it a one-line error, exit 2 (default: none)",
    )
    py.add_argument(
        "--search",
        action="store_true",
        help="instead of --target/--draft, search small rational rows (V 2..--max-vocab, denominators up "
        "to --max-denominator) for the smallest input on which the sampler is lossy",
    )
    py.add_argument(
        "--reference",
        metavar="MODULE:FUNCTION",
        help="the differential test: your plain (non-speculative) sampler, called as FUNCTION(row) on "
        "the target's row at each position; the speculative step is judged against its law of "
        "gamma + 1 tokens instead of the target's rows",
    )
    py.add_argument("--max-vocab", type=int, default=4, metavar="V", help="--search: largest V (default 4)")
    py.add_argument(
        "--max-denominator",
        type=int,
        default=4,
        metavar="D",
        help="--search: largest denominator of an entry (default 4)",
    )
    py.add_argument("--strict", action="store_true", help="float-faithful exits 1 too")
    py.add_argument(
        "--nearest",
        action="store_true",
        help="name the nearest correct float implementation even for a gross fault (a TV above 2^-6 per "
        "row; by default such a fault is lossy without that scan, which takes minutes on a block)",
    )
    py.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: verdict, tv, tv_from_float_ideal, arithmetic, law ('n/d')",
    )


def _load_function(text: str):
    """MODULE:FUNCTION, MODULE importable (the current directory first) or a path to a .py file."""
    import importlib
    import importlib.util

    module_name, sep, func_name = text.rpartition(":")
    if not sep or not module_name or not func_name:
        raise _Usage(f"{text!r} is not MODULE:FUNCTION")
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            if not Path(module_name).exists():
                raise _Usage(f"cannot load {module_name!r}: no such file")
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
    from specproof.laws.rational import format_fraction as ff

    def key(out) -> str:
        return " ".join(map(str, out)) if isinstance(out, tuple) else str(out)

    def rows(items) -> list:
        return [{"output": key(o), "traced": ff(a), "expected": ff(b)} for o, a, b in items[:50]]

    return {
        "verdict": result.verdict,
        "tv": ff(result.tv),
        "tv_from_float_ideal": ff(result.tv_from_float_ideal),
        "arithmetic": result.arithmetic,
        "gamma": result.gamma,
        "outside_support": ff(result.outside_support),
        "law": {key(o): ff(m) for o, m in result.law.items()},
        "differing": rows(result.differing),
        "member_differing": rows(result.member_differing),
        "runs": result.trace.runs,
        "control": getattr(result.trace, "control", ""),
        "assumptions": list(result.trace.assumptions),
        "caveats": list(result.caveats),
        "floor": _floor_json(getattr(result, "floor", None)),
    }


def _floor_json(floor) -> dict | None:
    """The widening argument of a small TV (``specproof.trace.floor``), or None when none was made."""
    from specproof.laws.rational import format_fraction as ff

    if floor is None:
        return None
    return {
        "argument": floor.argument,
        "outcome": floor.outcome,
        "narrow": floor.narrow,
        "wide": floor.wide,
        "tv": ff(floor.tv),
        "tv_wide": None if floor.tv_wide is None else ff(floor.tv_wide),
        "threshold": None if floor.threshold is None else ff(floor.threshold),
        "reason": floor.reason,
        "runs": floor.runs,
    }


def _file_dtype(path: str | None, dist) -> str | None:
    """The float dtype a binary rows file holds (``.npy``, ``.safetensors``, ``.pt``; ``dist``, its
    rows as loaded), else None (text formats hold decimal numbers, no dtype)."""
    if path is None or dist is None or Path(path).suffix not in (".npy", ".safetensors", ".pt"):
        return None
    policy = getattr(dist.vectors[0], "policy", None) if dist.vectors else None
    dtype = None if policy is None else str(policy.source_dtype).replace("torch.", "")
    return dtype if dtype in ("float16", "bfloat16", "float32", "float64") else None


def _search_python(args: argparse.Namespace, func, name: str) -> int:
    """``trace python --search``: the smallest rows (target p, draft q) on which the sampler is lossy, or raises;
    the exit code (0: none found)."""
    from specproof.trace import testing

    if args.target or args.draft or args.reference:
        raise _Usage("--search tries its own rows against the target: give no --target, --draft or --reference")
    if not 2 <= args.max_vocab <= MAX_SEARCH_VOCAB or args.max_denominator < 1:
        raise _Usage(
            f"--max-vocab must be in 2..{MAX_SEARCH_VOCAB} (the search is over small rows; for a large V "
            "give --target/--draft) and --max-denominator >= 1"
        )
    import time

    desc = f"V 2..{args.max_vocab}, denominators 1..{args.max_denominator}"
    started, tried = time.monotonic(), [0]

    def step(n: int) -> None:
        tried[0] += n
        bar.update(n)

    with _bar(unit="pair", desc=f"search {desc}") as bar:
        found = testing.search_lossy(
            func,
            gamma=args.gamma,
            dtype=args.dtype,
            array=args.array,
            max_vocab=args.max_vocab,
            max_denominator=args.max_denominator,
            numpy_rng=args.numpy_rng,
            max_runs=args.max_runs,
            progress=step,
        )
    if found is None:
        out = {
            "command": "trace",
            "function": args.function,
            "search": None,
            "pairs": tried[0],
            "max_vocab": args.max_vocab,
            "max_denominator": args.max_denominator,
        }
        print(
            json.dumps(out, indent=2)
            if args.json
            else f"{name}: no lossy input among {tried[0]} pairs ({desc}, {args.dtype} rows"
            + (f", gamma {args.gamma}" if args.gamma else "")
            + f"; {time.monotonic() - started:.1f} s)"
        )
        return 0
    return _report_found(args, name, found, tried[0])


def _report_found(args: argparse.Namespace, name: str, found, tried: int) -> int:
    """Reports what ``--search`` found: the smallest lossy rows (target p, draft q) with the comparison, or the rows
    on which the sampler raised; the exit code (1: a fault)."""
    from specproof.laws.rational import format_fraction as ff

    text = lambda x: str(x.numerator) if x.denominator == 1 else ff(x)  # noqa: E731 - never 0/1 or 1/1
    skipped = [{"p": [ff(x) for x in p], "q": [ff(x) for x in q], "raised": why} for p, q, why in found.skipped]
    rows = {"p": [ff(x) for x in found.p], "q": [ff(x) for x in found.q], "pairs": found.pairs}  # the pair found
    if found.comparison is None:
        where = f"p = ({', '.join(map(text, found.p))}), q = ({', '.join(map(text, found.q))})"
        if args.json:
            _print_json(
                {
                    "command": "trace",
                    "function": args.function,
                    "search": {
                        **rows,
                        "raised": found.raised,
                        "raised_on": len(found.skipped) or 1,
                        "tried": tried,
                    },
                }
            )
        else:
            more = (
                f" (and on {len(found.skipped) - 1} more of the {tried} pairs tried; none was lossy)"
                if len(found.skipped) > 1
                else f" (none of the {tried} pairs tried was lossy)"
            )
            print(
                f"{name}: the sampler raised on valid rows (pair {found.pairs} of the search): {where}{more}\n"
                f"  {found.raised}"
            )
        return 1
    if args.json:
        _print_json(
            {
                "command": "trace",
                "function": args.function,
                "search": {
                    **rows,
                    **_comparison_json(found.comparison),
                    "skipped": skipped,
                },
            }
        )
    else:
        print(
            f"{name}: smallest lossy input (pair {found.pairs} of the search): p = ({', '.join(map(text, found.p))}), "
            f"q = ({', '.join(map(text, found.q))})"
        )
        if found.skipped:
            p0, q0, why = found.skipped[0]
            print(
                f"  (skipped {len(found.skipped)} earlier pair(s) on which the sampler raised, a fault too; first: "
                f"p = ({', '.join(map(text, p0))}), q = ({', '.join(map(text, q0))}): {why})"
            )
        print(found.comparison.report(command_line=True))
    return 1


def _rows_given(files: tuple, loaded: dict, make) -> tuple[list, list[str]]:
    """The target p and draft q rows as the sampler's arrays (made by ``make``), and the degenerate rows named."""
    rows, degenerate = [], []
    for path, what in files:
        dist = loaded[what]  # a degenerate row is audited, not refused
        vals: list[list[float]] = []
        if dist.floats is None:  # an exact file: only a float row can be degenerate, so every row has a law
            for v in dist.vectors:
                assert v is not None
                vals.append([float(x) for x in v.fractions()])
        else:
            vals = [[float(x) for x in f] for f in dist.floats]
        rows.append(make(vals if dist.batched else vals[0]))
        degenerate += [
            f"{what}{f'[{i}]' if dist.batched else ''} ({Path(path).name}): {why}"
            for i, why in enumerate(dist.degenerate)
            if why is not None
        ]
    return rows, degenerate


def _report_refused(args: argparse.Namespace, name: str, degenerate: list[str], exc: Exception) -> None:
    """Prints the sampler's refusal of a degenerate row (no token emitted), as JSON or as text."""
    if args.json:
        _print_json(
            {
                "command": "trace",
                "function": args.function,
                "dtype": args.dtype,
                "verdict": "refused",
                "degenerate": degenerate,
                "raised": str(exc),
            }
        )
    else:
        print(f"{name}: REFUSED a degenerate row (no token emitted)")
        for d in degenerate:
            print(f"  degenerate row {d}")
        print(f"  the sampler raised: {exc}")


def _trace_python(args: argparse.Namespace) -> int:
    from specproof.trace import testing
    from specproof.trace.tracer import SamplerRaised

    func = _load_function(args.function)
    if args.max_runs < 1:
        raise _Usage("--max-runs must be >= 1")
    if args.timeout is not None and not args.timeout > 0:
        raise _Usage("--timeout must be a number of seconds > 0")
    files = ((args.target, "p"), (args.draft, "q"))
    loaded = {}  # the rows files, read once: their rows, and a binary file's dtype
    if not args.search and args.target and args.draft:
        loaded = {what: load_distributions(path, what, keep_degenerate=True) for path, what in files}
    if args.dtype is None:
        args.dtype = _file_dtype(args.target, loaded.get("p")) or "float32"
    if args.array == "numpy" and args.dtype == "bfloat16":
        raise _Usage("NumPy has no bfloat16: use --array torch")
    if args.array == "torch":
        try:
            import torch  # noqa: F401
        except ImportError:
            raise _Usage("--array torch needs torch (the 'models' extra); or pass --array numpy") from None
    name = f"{args.function} on {args.dtype} {'tensors' if args.array == 'torch' else 'arrays'}"
    if args.search:
        return _search_python(args, func, name)
    if not args.target or not args.draft:
        raise _Usage("give --target P and --draft Q (or --search)")
    make = testing._row_maker(args.array, args.dtype)
    (target, draft), degenerate = _rows_given(files, loaded, make)
    if target.shape[-1] != draft.shape[-1]:  # the sampler would index one row with the other's ids
        raise _Usage(
            f"--target has V = {target.shape[-1]} entries per row ({Path(args.target).name}) but --draft has "
            f"V = {draft.shape[-1]} ({Path(args.draft).name}): the rows of one vocabulary have one length"
        )
    plain = None if args.reference is None else _load_function(args.reference)
    try:
        with _bar(unit="run", desc="tracing") as bar:
            result = testing.compare(
                func,
                target,
                draft,
                gamma=args.gamma,
                numpy_rng=args.numpy_rng,
                max_runs=args.max_runs,
                progress=bar.update,
                reference=plain,
                max_seconds=args.timeout,
                nearest=args.nearest,
            )
    except SamplerRaised as exc:
        if not degenerate:
            if args.numpy_rng is None and "required positional argument" in str(exc):
                raise _Usage(
                    f"{exc}; a sampler that takes a NumPy Generator: name that argument with --numpy-rng "
                    "NAME, and specproof passes the generator it controls"
                ) from None
            raise
        # the sampler refuses a row that is no distribution: the right answer, and the finding
        _report_refused(args, name, degenerate, exc)
        return 0
    if degenerate and result.verdict != "lossy":  # a degenerate draft row alone, on which the sampler emits p's law
        result = dataclasses.replace(result, caveats=(*result.caveats, *(f"degenerate row {d}" for d in degenerate)))
    if args.json:
        _print_json(
            {
                "command": "trace",
                "function": args.function,
                "dtype": args.dtype,
                **_comparison_json(result),
                **({"degenerate": degenerate} if degenerate else {}),
            }
        )
    else:
        print(f"{name}, V {target.shape[-1]}" + (f", gamma {result.gamma}" if result.gamma else ", one position"))
        print(result.report(command_line=True))
    if result.verdict == "lossless" or (result.verdict == "float-faithful" and not args.strict):
        return 0
    return 1


def run(args: argparse.Namespace) -> int:
    if args.library == "python":
        return _trace_python(args)
    try:
        from specproof.trace.adapters import transformers as hf
    except ImportError as exc:  # pragma: no cover - the models extra is missing
        raise _Usage(f"specproof trace transformers needs torch and transformers (the 'models' extra): {exc}") from exc
    t = hf.read_logits(args.target_logits, "--target-logits")
    d = hf.read_logits(args.draft_logits, "--draft-logits")
    if args.gamma is not None and (args.gamma < 1 or d.shape[0] != args.gamma or t.shape[0] != args.gamma + 1):
        raise _Usage(
            f"--gamma {args.gamma} needs [gamma + 1, V] target and [gamma, V] draft logits; got "
            f"{list(t.shape)} and {list(d.shape)}"
        )
    try:
        result = hf.speculative_sampling_law(t, d, ensemble_weight=args.ensemble_weight, dtype=args.dtype)
    except ImportError as exc:  # pragma: no cover
        raise _Usage(f"specproof trace transformers needs torch and transformers: {exc}") from exc
    out = result.as_dict()
    if args.json:
        _print_json({"command": "trace", "library": "transformers", **out})
    else:
        from specproof.report.transcript import number_text

        ver = result.versions
        print(
            f"transformers {ver['transformers']} (torch {ver['torch']}) _speculative_sampling, gamma "
            f"{result.gamma}, V {result.vocab_size}"
            + (f", ensemble weight {result.ensemble_weight}" if result.ensemble_weight is not None else "")
            + f": {out['verdict'].upper()}"
        )
        print(f"  TV of the first gamma + 1 tokens from the target's joint law: {number_text(result.tv)}")
        if result.verdict == "lossy" and result.ensemble_weight is not None:
            print(
                "  the static ensemble (assistant_ensemble_weight) is lossy by design; its law is judged against "
                "the target alone, not the float-ideal family"
            )
        else:
            from specproof.trace.testing import verdict_lines

            for line in verdict_lines(result.judgement):
                print(line)
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
    return 0 if result.verdict == "lossless" or (result.verdict == "float-faithful" and not args.strict) else 1
