"""Mutation testing of the trusted checker and the exact core: do the tests catch a changed rule?

Each mutant is one small change to one module's source, generated from operators on its syntax
tree (so the list follows the code through rewrites; nothing here names a line of it):

==============  ==================================================================================
operator        change
==============  ==================================================================================
``compare``     ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``in`` <-> ``not in``,
                ``is`` <-> ``is not``
``flip``        the two sides of an order comparison swapped (``a < b`` -> ``b < a``)
``minmax``      ``min`` <-> ``max``, ``np.minimum`` <-> ``np.maximum``
``constant``    an integer n -> n + 1, ``True`` <-> ``False``, a float x -> 2x (1.0 for 0.0)
``binop``       ``+`` <-> ``-``, ``*`` <-> ``/``, ``//`` -> ``*``, ``**`` -> ``*`` (also in ``+=``...)
``swap``        the operands of ``-`` and ``/`` swapped; two name arguments of a call swapped
                (``f(p, q)`` -> ``f(q, p)``: p and q exchanged in one place)
``boolop``      ``and`` <-> ``or``
``not``         ``not x`` -> ``x``
``drop``        a statement removed: a ``raise``, an ``if`` (not an ``elif``), an augmented
                assignment, an assignment to an item or attribute, an expression statement,
                ``continue`` / ``break``
==============  ==================================================================================

Strings (messages, docstrings), f-strings and annotations are left alone. Every mutant runs
the module's own test files (and its doctests) with ``pytest -x`` in a temporary copy of the
tree, so the work tree is never touched: the file that speaks most directly for the mutated
function alone first, then the others (a mutant that file kills pays for no other file's
collection). In those runs the checker's fuzz test
(``tests/test_checker_fuzz.py``) mutates 60 JSON values per genuine document instead of 250
(``SPECPROOF_FUZZ_MUTANTS``): still every schema and every kind of edit, seeded, in a quarter
of the time. A mutant is *killed* if the tests fail (or time out: four times the unmutated
run, plus a minute), *survived* if they pass, *equivalent* if it is listed, with the reason it cannot change
behaviour, in ``benchmarks/mutation_equivalent.md``; equivalent mutants are not run. The
score is killed / (generated - equivalent).

    python benchmarks/mutation.py exact chain            # the exact core (about 15 minutes)
    python benchmarks/mutation.py checker --jobs 2       # the trusted checker
    python benchmarks/mutation.py exact --list           # the mutants, not run
    python benchmarks/mutation.py chain --sample 40 --seed 0 --min-score 95
    python benchmarks/mutation.py chain --json out.json; ...; python benchmarks/mutation.py chain --survivors-of out.json
    python benchmarks/mutation.py checker --match ':: _check_outcome ::'   # one function's mutants

Runs from a fresh clone once the package's dependencies and the ``test`` extra are installed
(``pip install -e '.[test]'``); the copy is put first on ``PYTHONPATH``, so an installed
specproof is not what the tests see. Exit 0 unless a module scores below ``--min-score`` or
the unmutated tests fail.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import hashlib
import json
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT_FILE = ROOT / "benchmarks" / "mutation_equivalent.md"
#: JSON values mutated per genuine document by ``tests/test_checker_fuzz.py`` in a mutant's run
#: (250 in the default test run): still every schema and every kind of value edit, a quarter of the time.
FUZZ_MUTANTS = "60"


@dataclass(frozen=True)
class Target:
    """A module to mutate and the tests that speak for it."""

    source: str
    tests: tuple[str, ...]
    #: (regular expression on a mutant's scope, test file): that file runs first for those
    #: mutants. Only the order changes (``-x`` stops at the first failure sooner), not the tests.
    first: tuple[tuple[str, str], ...] = ()

    def ordered(self, scope: str) -> tuple[str, ...]:
        """The test files, the one that speaks most directly for ``scope`` first."""
        outer = scope.split(".")[0]  # a nested function or a method: its enclosing one's file
        lead = [test for pattern, test in self.first if re.fullmatch(pattern, scope) or re.fullmatch(pattern, outer)]
        return tuple(dict.fromkeys(lead[:1] + list(self.tests)))


MODULES = {
    # the two slowest files (about 11 s and 7 s unmutated) last: a mutant the others kill never waits for them
    "checker": Target(
        "src/specproof/checker.py",
        (
            "tests/test_checker.py",
            "tests/test_chain_certificate.py",
            "tests/test_outcome_certificate.py",
            "tests/test_checker_fuzz.py",
            "tests/test_checker_mutants.py",
            "tests/test_block_certificate.py",
            "tests/test_float_certificate.py",
            "tests/test_checker_derived.py",
            "tests/test_checker_binding.py",
            "tests/test_trust_cases.py",
        ),
        first=(
            (
                r"_outcome_rows|_dependency_order|_Named|_named|_list|_fraction|_derive|_named_row|_token"
                r"|_coin_below|_threshold|_event_probability|_race_given|_check_outcome|_less|_branch_shapes"
                r"|_reference|_reads",
                "tests/test_outcome_certificate.py",
            ),
            (
                r"_children|_stop_tokens|_check_chain.*|_check_prefix|_row_index|_chain_rows|_sum|_product",
                "tests/test_chain_certificate.py",
            ),
            (
                r"_check_block|_stream_gap|_block_leaf|_walk|_input_key|_position_leaf|_document_nodes",
                "tests/test_block_certificate.py",
            ),
            (
                r"_textbook_position|_token_law|_law_tv|_check_position|_free|Position|Node|Branch",
                "tests/test_checker.py",
            ),
            (r"_ordered_sum|_named_sum|_stated_sums|_sum_orders|_derived_from", "tests/test_checker_derived.py"),
            (r"input_rows|_input_value|_decimal_float64|bind|lossless|gate", "tests/test_checker_binding.py"),
            (
                r"_float_format|_round_float|_rounded_row|_float_sum|_float_product|_charged",
                "tests/test_float_certificate.py",
            ),
        ),
    ),
    "exact": Target("src/specproof/laws/exact.py", ("tests/test_exact.py",)),
    "chain": Target(
        "src/specproof/laws/chain.py",
        ("tests/test_chain.py", "tests/test_chain_certificate.py", "tests/test_paper_tables.py"),
    ),
    # the block engine and its front ends: the chain, token trees, typical acceptance and block
    # verification (test_variants), the engines' rules (test_audit), relaxed rules, outcome trees
    "block": Target(
        "src/specproof/laws/block.py",
        (
            "tests/test_block.py",
            "tests/test_chain.py",
            "tests/test_chain_certificate.py",
            "tests/test_paper_tables.py",
            "tests/test_relaxed.py",
            "tests/test_outcome.py",
            "tests/test_audit.py",
            "tests/test_variants.py",
        ),
    ),
}


@dataclass(frozen=True)
class Mutant:
    """One change: ``before`` (the node's source) becomes ``after`` at lines ``line..end_line``."""

    module: str
    scope: str
    operator: str
    before: str
    after: str
    occurrence: int
    line: int
    col: int
    end_line: int
    end_col: int
    replacement: str = field(repr=False)

    @property
    def key(self) -> str:
        """Stable name: module, enclosing function, operator, change, and which of equal ones."""
        return f"{self.module} :: {self.scope} :: {self.operator} :: {self.before} => {self.after} :: {self.occurrence}"

    @property
    def where(self) -> str:
        return f"{MODULES[self.module].source}:{self.line}:{self.col + 1}"


# ------------------------------------------------------------------------- generation

_COMPARE = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_BINOP = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Pow: ast.Mult,
}
_MINMAX = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum"}


def _short(node: ast.AST, limit: int = 70) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _copy(node: ast.AST) -> ast.AST:
    return ast.parse(ast.unparse(node), mode="eval").body if isinstance(node, ast.expr) else node


def _skipped_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes inside strings, f-strings, annotations and docstrings: never mutated."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            mark(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark(node.returns)
            for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
                mark(a.annotation)
            for a in (node.args.vararg, node.args.kwarg):
                if a is not None:
                    mark(a.annotation)
        elif isinstance(node, ast.AnnAssign):
            mark(node.annotation)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            mark(node)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                mark(first)
    return skip


def _expression_mutations(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(operator, mutated copy) for one expression node."""
    out: list[tuple[str, ast.AST]] = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE:
                new = _copy(node)
                new.ops[i] = _COMPARE[type(op)]()
                out.append(("compare", new))
        if len(node.ops) == 1 and isinstance(node.ops[0], _ORDER):
            new = _copy(node)
            new.left, new.comparators[0] = new.comparators[0], new.left
            out.append(("flip", new))
    elif isinstance(node, ast.BinOp):
        if type(node.op) in _BINOP:
            new = _copy(node)
            new.op = _BINOP[type(node.op)]()
            out.append(("binop", new))
        if isinstance(node.op, (ast.Sub, ast.Div)):
            new = _copy(node)
            new.left, new.right = new.right, new.left
            out.append(("swap", new))
    elif isinstance(node, ast.BoolOp):
        new = _copy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        out.append(("boolop", new))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("not", _copy(node.operand)))
    elif isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in _MINMAX and (isinstance(func, ast.Name) or name in ("minimum", "maximum")):
            new = _copy(node)
            if isinstance(new.func, ast.Name):
                new.func.id = _MINMAX[name]
            else:
                new.func.attr = _MINMAX[name]
            out.append(("minmax", new))
        names = [i for i, a in enumerate(node.args) if isinstance(a, ast.Name)]
        if len(node.args) >= 2 and len(names) >= 2:
            i, j = names[0], names[1]
            if node.args[i].id != node.args[j].id:
                new = _copy(node)
                new.args[i], new.args[j] = new.args[j], new.args[i]
                out.append(("swap", new))
    elif isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)) and node.value is not None:
        value = node.value
        if isinstance(value, bool):
            new_value: object = not value
        elif isinstance(value, int):
            new_value = value + 1
        elif isinstance(value, float):
            new_value = value * 2 if value else 1.0
        else:
            return out
        out.append(("constant", ast.Constant(new_value)))
    return out


def _statement_dropped(node: ast.stmt, parent_if_orelse: bool) -> bool:
    if isinstance(node, (ast.Raise, ast.AugAssign, ast.Continue, ast.Break)):
        return True
    if isinstance(node, ast.If):
        return not parent_if_orelse
    if isinstance(node, ast.Expr):
        return not isinstance(node.value, ast.Constant)
    if isinstance(node, ast.Assign):
        return all(isinstance(t, (ast.Subscript, ast.Attribute)) for t in node.targets)
    return False


def generate(module: str, source: str | None = None) -> list[Mutant]:
    """Every mutant of ``module`` (a key of :data:`MODULES`), in source order, deduplicated."""
    path = ROOT / MODULES[module].source
    text = path.read_text(encoding="utf-8") if source is None else source
    _SOURCES[module] = text  # the text the mutants are made from, even if the file changes meanwhile
    tree = ast.parse(text)
    skip = _skipped_nodes(tree)
    lines = text.encode("utf-8").splitlines(keepends=True)
    found: list[tuple[tuple[int, int], str, str, str, str, ast.AST, str]] = []

    def visit(node: ast.AST, scope: list[str], elif_node: bool = False) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in node.decorator_list:
                visit(d, scope)
            inner = scope + [node.name]
            for child in node.body:
                visit(child, inner)
            return
        where = ".".join(scope) or "<module>"
        if id(node) not in skip:
            if isinstance(node, ast.expr):
                for op, new in _expression_mutations(node):
                    if ast.unparse(new) == ast.unparse(node):
                        continue  # changes nothing
                    found.append(
                        (
                            (node.lineno, node.col_offset),
                            where,
                            op,
                            _short(node),
                            _short(new),
                            node,
                            "(" + ast.unparse(new) + ")",
                        )
                    )
            elif isinstance(node, ast.AugAssign) and type(node.op) in _BINOP:
                new = ast.AugAssign(target=node.target, op=_BINOP[type(node.op)](), value=node.value)
                found.append(
                    ((node.lineno, node.col_offset), where, "binop", _short(node), _short(new), node, ast.unparse(new))
                )
            if isinstance(node, ast.stmt) and scope and _statement_dropped(node, elif_node):
                op = "drop-raise" if isinstance(node, ast.Raise) else "drop"
                found.append(((node.lineno, node.col_offset), where, op, _short(node, 60), "pass", node, "pass"))
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.AST):
                        is_elif = (
                            isinstance(node, ast.If)
                            and name == "orelse"
                            and len(value) == 1
                            and isinstance(child, ast.If)
                            and _is_elif(lines, child)
                        )
                        visit(child, scope, is_elif)
            elif isinstance(value, ast.AST):
                visit(value, scope)

    visit(tree, [])
    found.sort(key=lambda f: f[0])
    # each mutant is checked (parsed) within its top-level statement only: fast on big modules
    tops = [(min([t.lineno] + [d.lineno for d in getattr(t, "decorator_list", [])]), t.end_lineno) for t in tree.body]
    mutants: list[Mutant] = []
    seen_sources: set[str] = set()
    counts: dict[tuple[str, str, str, str], int] = {}
    for _, where, op, before, after, node, replacement in found:
        first, last = next((a, b) for a, b in tops if a <= node.lineno <= b)
        line, col, end_line, end_col = _span(node)
        chunk = _apply(lines[first - 1 : last], (line - first + 1, col, end_line - first + 1, end_col), replacement)
        try:
            ast.parse(chunk)
        except SyntaxError:
            continue
        digest = hashlib.sha256(f"{first}\n{chunk}".encode()).hexdigest()
        if digest in seen_sources:
            continue
        seen_sources.add(digest)
        n = counts.get((where, op, before, after), 0)
        counts[(where, op, before, after)] = n + 1
        mutants.append(Mutant(module, where, op, before, after, n, line, col, end_line, end_col, replacement))
    return mutants


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def _is_elif(lines: list[bytes], node: ast.If) -> bool:
    return lines[node.lineno - 1][: node.col_offset].strip() == b"" and lines[node.lineno - 1][
        node.col_offset :
    ].startswith(b"elif")


def _apply(lines: list[bytes], span: tuple[int, int, int, int], replacement: str) -> str:
    """The source with ``span`` = (line, col, end_line, end_col) replaced; lines from 1, columns
    in UTF-8 bytes from 0, as :mod:`ast` gives them."""
    start, col, end, end_col = span[0] - 1, span[1], span[2] - 1, span[3]
    head = lines[start][:col]
    tail = lines[end][end_col:]
    return b"".join(lines[:start] + [head + replacement.encode() + tail] + lines[end + 1 :]).decode("utf-8")


_SOURCES: dict[str, str] = {}


def mutated_source(mutant: Mutant) -> str:
    """The module's source (as :func:`generate` read it) with ``mutant`` applied."""
    text = _SOURCES[mutant.module]
    lines = text.encode("utf-8").splitlines(keepends=True)
    return _apply(lines, (mutant.line, mutant.col, mutant.end_line, mutant.end_col), mutant.replacement)


# ------------------------------------------------------------------------- equivalents

_ENTRY = re.compile(r"^- `(?P<key>[^`]+)`")


def equivalent_keys(path: Path = EQUIVALENT_FILE) -> dict[str, str]:
    """Keys listed in the equivalents file (``- `key` -- reason`` lines), with their reasons."""
    out: dict[str, str] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            m = _ENTRY.match(line)
            if m:
                out[m["key"]] = line[m.end() :].lstrip(" -:")
    return out


# ------------------------------------------------------------------------- running

_IGNORE = shutil.ignore_patterns(
    ".git",
    "__pycache__",
    ".hypothesis",
    "*.egg-info",
    ".venv",
    "venv",
    "specproof-transcripts",
    ".benchmarks",
    ".pytest_cache",
    "mutants",
)


def _workspace(base: Path, i: int) -> Path:
    dest = base / f"tree{i}"
    shutil.copytree(ROOT, dest, ignore=_IGNORE)
    return dest


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tree / "src"), str(tree / "tests")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a stale .pyc of the same size and second must never be used
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(tree / ".hypothesis")
    env["SPECPROOF_FUZZ_MUTANTS"] = FUZZ_MUTANTS
    return env


def _pytest(tree: Path, module: str, timeout: float, scope: str = "") -> tuple[str, float, int]:
    """Run ``module``'s tests in ``tree``: first the file that speaks most directly for ``scope``
    alone, then (if it passes) the other files and the module's doctests. The verdict is that of
    one run of them all with ``-x``; a mutant the first file kills costs only that file's
    collection, not all of them."""
    target = MODULES[module]
    files = target.ordered(scope)
    stages = ([files[0]], [*files[1:], target.source]) if scope else ([*files, target.source],)
    start = time.perf_counter()
    rc, status = 0, "survived"
    for stage in stages:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-x",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "--doctest-modules",
            "-m",
            "not slow",
            *stage,
        ]
        left = timeout - (time.perf_counter() - start)
        try:
            proc = subprocess.run(
                cmd,
                cwd=tree,
                env=_env(tree),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=max(left, 1.0),
            )
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc, status = -1, "timeout"
            break
        if rc != 0:
            status = "killed"
            break
    shutil.rmtree(tree / ".hypothesis", ignore_errors=True)  # no example database shared between mutants
    return status, time.perf_counter() - start, rc


def _check_copy_is_imported(tree: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import specproof; print(specproof.__file__)"],
        cwd=tree,
        env=_env(tree),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(out).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the copy is not what Python imports (it imports {out}); cannot mutate safely")


def run(module: str, mutants: list[Mutant], jobs: int, progress: bool = True) -> dict:
    """Run ``mutants`` of one module; return the per-mutant results and the tallies."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="specproof-mutation-") as tmp:
        trees: queue.Queue[Path] = queue.Queue()
        for i in range(max(1, jobs)):
            trees.put(_workspace(Path(tmp), i))
        first = trees.get()
        _check_copy_is_imported(first)
        status, baseline, rc = _pytest(first, module, timeout=1800)
        trees.put(first)
        if status != "survived":
            raise SystemExit(f"{module}: the unmutated tests fail (pytest exit {rc}); fix them first")
        timeout = 4 * baseline + 60  # a mutant that loops forever costs a few runs, not ten
        source_rel = MODULES[module].source

        def one(m: Mutant) -> dict:
            tree = trees.get()
            path = tree / source_rel
            original = path.read_bytes()
            if original != _SOURCES[module].encode("utf-8"):
                raise SystemExit(f"{source_rel} in the copy differs from the source the mutants were made from")
            try:
                path.write_text(mutated_source(m), encoding="utf-8")
                status, seconds, rc = _pytest(tree, module, timeout, m.scope)
            finally:
                path.write_bytes(original)
                trees.put(tree)
            return {"key": m.key, "where": m.where, "status": status, "seconds": round(seconds, 2), "rc": rc}

        results = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for n, r in enumerate(pool.map(one, mutants), 1):
                results.append(r)
                if progress:
                    print(f"[{module} {n}/{len(mutants)}] {r['status']:8} {r['where']}  {r['key']}", file=sys.stderr)
    return {
        "results": results,
        "baseline_seconds": round(baseline, 2),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", choices=[*MODULES, "all"], help="modules to mutate")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once, each in its own copy (default 1)")
    parser.add_argument("--list", action="store_true", help="list the mutants (and stale equivalents); run nothing")
    parser.add_argument("--sample", type=int, default=None, help="run a random sample of this many mutants per module")
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    parser.add_argument("--min-score", type=float, default=None, help="exit 1 if a module's score (%%) is below this")
    parser.add_argument("--json", type=Path, default=None, help="write every result to this JSON file")
    parser.add_argument(
        "--survivors-of",
        type=Path,
        default=None,
        metavar="JSON",
        help="run only the mutants that survived in this earlier --json report",
    )
    parser.add_argument(
        "--match",
        default=None,
        metavar="REGEX",
        help="run only the mutants whose key matches this regular expression (re.search)",
    )
    parser.add_argument("--quiet", action="store_true", help="no per-mutant progress lines")
    args = parser.parse_args(argv)
    modules = list(MODULES) if "all" in args.modules else list(dict.fromkeys(args.modules))
    equivalent = equivalent_keys()
    report: dict[str, dict] = {}
    status = 0
    for module in modules:
        mutants = generate(module)
        keys = {m.key for m in mutants}
        stale = sorted(k for k in equivalent if k.startswith(module + " ::") and k not in keys)
        for k in stale:
            print(f"warning: listed as equivalent but no longer generated: {k}", file=sys.stderr)
        todo = [m for m in mutants if m.key not in equivalent]
        n_equivalent = len(mutants) - len(todo)
        if args.list:
            for m in mutants:
                mark = "equivalent" if m.key in equivalent else ""
                print(f"{m.where}\t{m.key}\t{mark}")
            print(f"{module}: {len(mutants)} mutants, {n_equivalent} listed as equivalent")
            continue
        if args.survivors_of is not None:
            earlier = json.loads(args.survivors_of.read_text(encoding="utf-8")).get(module, {}).get("results", [])
            again = {r["key"] for r in earlier if r["status"] == "survived"}
            todo = [m for m in todo if m.key in again]
        if args.match is not None:
            todo = [m for m in todo if re.search(args.match, m.key)]
        if args.sample is not None and args.sample < len(todo):
            todo = sorted(random.Random(args.seed).sample(todo, args.sample), key=lambda m: (m.line, m.col))
        outcome = run(module, todo, args.jobs, progress=not args.quiet)
        killed = sum(r["status"] in ("killed", "timeout") for r in outcome["results"])
        survived = [r for r in outcome["results"] if r["status"] == "survived"]
        score = 100.0 * killed / len(todo) if todo else 100.0
        report[module] = {
            "generated": len(mutants),
            "equivalent": n_equivalent,
            "run": len(todo),
            "killed": killed,
            "survived": len(survived),
            "score": round(score, 1),
            **outcome,
        }
        if args.min_score is not None and score < args.min_score:
            status = 1
    if args.list:
        return 0
    print()
    print(
        f"{'module':8} {'mutants':>7} {'equiv.':>6} {'run':>5} {'killed':>6} {'survived':>8} {'score':>7} {'time':>8}"
    )
    for module, r in report.items():
        print(
            f"{module:8} {r['generated']:7d} {r['equivalent']:6d} {r['run']:5d} {r['killed']:6d} "
            f"{r['survived']:8d} {r['score']:6.1f}% {r['seconds']:7.0f}s"
        )
    for r in report.values():
        for s in (x for x in r["results"] if x["status"] == "survived"):
            print(f"survived: {s['where']}  {s['key']}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
