"""The package's layers, checked: docs/architecture.md's drawing as a test (issue 31).

Each role package (and the main job, theorems.py) may import only from the layers below it, with no
exception: a new import against the arrows fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "specproof"

#: Bottom to top. The public paths (specproof/__init__, exact, numeric, testing, __main__) stand on top.
LAYERS = ["errors", "checker", "laws", "rules", "models", "trace", "certify", "report", "theorems", "corpus", "cli"]
TOP = {"", "__init__", "__main__", "exact", "numeric", "testing", "_version"}


def _layer(module: str) -> str | None:
    """The role package of ``specproof.X...`` (X itself for a top-level module), else None."""
    parts = module.split(".")
    if parts[0] != "specproof":
        return None
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path) -> set[str]:
    """The specproof modules ``path`` imports, at any depth (function-level imports too)."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    here = list(rel.parts if path.name != "__init__.py" else rel.parts[:-1])
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if path.name == "__init__.py" else here[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module == "specproof":  # from specproof import checker, errors, ...
                out.update(f"specproof.{a.name}" for a in node.names)
            else:
                out.add(module)
    return out


def _upward() -> set[tuple[str, str]]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        source = _layer("specproof." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        if source in TOP or source not in LAYERS:
            continue
        for target in map(_layer, _imports(path)):
            if target in LAYERS and LAYERS.index(target) > LAYERS.index(source):
                found.add((path.relative_to(PACKAGE).as_posix(), target))
    return found


def test_every_package_is_a_layer():
    names = {
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    }
    assert names - TOP == set(LAYERS)


def test_no_new_import_runs_against_the_layers():
    assert _upward() == set(), "imports against docs/architecture.md's layers"


def test_the_trusted_checker_imports_only_the_standard_library():
    imported = {m.split(".")[0] for m in _imports(PACKAGE / "checker.py")}
    assert imported <= set(__import__("sys").stdlib_module_names)
