"""The layout by role: public import paths keep working, the top level is a dozen roles."""

import subprocess
import sys
from pathlib import Path

import specproof

PACKAGE = Path(specproof.__file__).resolve().parent


def test_public_paths_are_the_modules_they_name():
    from specproof import checker, exact, numeric, testing, trace
    from specproof.laws import exact as laws_exact
    from specproof.laws import numeric as laws_numeric
    from specproof.trace import testing as trace_testing
    from specproof.trace import tracer

    assert exact.residual is laws_exact.residual and sorted(exact.__all__) == sorted(laws_exact.__all__)
    assert numeric.residual is laws_numeric.residual and numeric.__all__ == laws_numeric.__all__
    assert testing.assert_lossless is trace_testing.assert_lossless
    assert testing.compare is trace_testing.compare and testing.__all__ == trace_testing.__all__
    assert trace.trace is tracer.trace and trace.stream_tv is tracer.stream_tv
    assert all(getattr(trace, name) is getattr(tracer, name) for name in tracer.__all__)
    assert Path(checker.__file__).parent == PACKAGE  # the trusted kernel: one file at the top


def test_top_level_is_roles():
    entries = sorted(p.name for p in PACKAGE.iterdir() if not p.name.startswith((".", "__pycache__")))
    packages = [e for e in entries if (PACKAGE / e).is_dir()]
    assert all((PACKAGE / e / "__init__.py").is_file() for e in packages)
    # the roles, the trusted checker, errors, the main job's theorems, and the three public paths
    assert entries == sorted(
        [
            *packages,
            "__init__.py",
            "__main__.py",
            "checker.py",
            "errors.py",
            "theorems.py",
            "exact.py",
            "numeric.py",
            "testing.py",
        ]
    ), entries
    assert packages == ["certify", "cli", "corpus", "laws", "models", "report", "rules", "trace"]


def test_import_specproof_imports_no_heavy_dependency():
    # the float path's default backend runs too: numba is imported only by backend="numba"
    code = (
        "import sys, specproof; assert 'numpy' not in sys.modules; "
        "import specproof.exact, specproof.testing, specproof.trace, specproof.checker, specproof.cli; "
        "from specproof.laws import numeric; numeric.emitted_distribution([0.5, 0.5], [0.25, 0.75]); "
        "print(sorted(m for m in ('torch', 'transformers', 'ray', 'pyarrow', 'matplotlib', 'numba', 'llvmlite') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_benchmarks_import_what_exists():
    # the benchmarks are not run by the suite; their imports of specproof must still resolve (a moved
    # module left bench_corpus.py importing specproof.numeric)
    import ast
    import importlib
    from pathlib import Path

    missing = []
    for path in sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "specproof":
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if not hasattr(module, alias.name):
                        try:
                            importlib.import_module(f"{node.module}.{alias.name}")
                        except ImportError:
                            missing.append(f"{path.name}:{node.lineno} {node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "specproof":
                        importlib.import_module(alias.name)
    assert not missing, missing
