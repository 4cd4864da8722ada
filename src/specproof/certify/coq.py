"""Certificates checked by Coq: a one-position certificate's rows as a ``.v`` file.

:func:`coq_text` transcribes a textbook certificate (schema ``specproof.certificate/1``, or a
bundle of them) into Coq: its rows p, q and emitted as lists of rationals of Coq's ``QArith``
(``Qmake n d`` is n/d, exactly as the certificate writes it), and one theorem per claim about the
definitions of ``proofs/coq/Spec.v`` evaluated on those rows, over any ``numFieldType`` R:

- ``law``: the verifier (``Spec.verifier``, the one ``verifier_lossless`` is about) emits token y
  with probability ``emitted[y]``, for every token y and every fallback law;
- ``lossless`` and ``TV_from_p`` (where the certificate claims ``dist_equals_p``): it emits y with
  probability p[y], and the total variation of its law from p is 0;
- ``alpha_is``, ``TV_is``, ``normalizer_is``, ``rejection_is``: ``alpha``, ``TV``,
  ``residual_mass`` and ``rejection_prob`` of Spec.v on the rows are the stated totals;
- ``alpha_is_1_minus_TV`` (where claimed), ``target_is_distribution``,
  ``draft_is_distribution`` and ``vocabulary`` (each row has V entries).

Every proof applies a theorem of ``proofs/coq/Certify.v`` and computes a boolean check on the rows
with ``vm_compute``: this module computes nothing about the law, it only writes the statements,
so a wrong stated value makes ``coqc`` fail. What it refuses (:class:`NotCertifiable`): other
schemas, a ``vocab_size`` that is not the number of rows, tokens out of order, negative or
malformed numbers, and numbers longer than :data:`MAX_BITS` bits.
:func:`compile_files` compiles generated files against ``Spec.v`` and ``Certify.v`` in a scratch
directory and times each.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specproof.errors import SpecProofError

__all__ = ["NotCertifiable", "MAX_BITS", "coq_text", "write_v", "compile_files", "COQ_SOURCES"]

#: The largest numerator or denominator, in bits, that :func:`coq_text` transcribes (the real
#: models' rows have about 70 bits, their totals about 135).
MAX_BITS = 4096
#: The Coq files a generated certificate file needs, under the logical prefix ``SpecProof``.
COQ_SOURCES = ("Spec.v", "Certify.v")
_SCHEMA = "specproof.certificate/1"
_BUNDLE = "specproof.bundle/1"
_RATIONAL = re.compile(r"(0|[1-9][0-9]*)/([1-9][0-9]*)")
_FLAGS = ("-w", "-notation-overridden,-ambiguous-paths")


class NotCertifiable(SpecProofError):
    """A document that :func:`coq_text` does not transcribe into Coq (the message says why)."""


def _number(text: Any, where: str) -> tuple[int, int]:
    if not isinstance(text, str):
        raise NotCertifiable(f"{where}: expected an exact 'n/d' string, got {type(text).__name__}")
    if len(text) > 2 * (MAX_BITS // 3 + 2):  # decimal digits of two MAX_BITS-bit numbers, before int()
        raise NotCertifiable(f"{where}: a number of {len(text)} characters is longer than MAX_BITS = {MAX_BITS} bits")
    match = _RATIONAL.fullmatch(text)
    if match is None:
        raise NotCertifiable(f"{where}: {text[:40]!r} is not a non-negative rational 'n/d' (d > 0)")
    n, d = int(match[1]), int(match[2])
    if max(n.bit_length(), d.bit_length()) > MAX_BITS:
        raise NotCertifiable(f"{where}: {text[:20]}... has more than MAX_BITS = {MAX_BITS} bits")
    return n, d


def _q(value: tuple[int, int]) -> str:
    return f"Qmake {value[0]} {value[1]}"


def _row(values: Sequence[tuple[int, int]]) -> str:
    return "[:: " + "; ".join(_q(v) for v in values) + "]"


def _comment(text: Any) -> str:
    """A name as a Coq comment: printable ASCII only, no comment delimiters."""
    clean = "".join(c if " " <= c <= "~" else "?" for c in str(text))[:80]
    return clean.replace("(*", "( *").replace("*)", "* )")


_CHECK = "vm_compute; reflexivity"


def _certificate(cert: Mapping[str, Any], where: str) -> list[str]:
    if not isinstance(cert, Mapping) or cert.get("schema") != _SCHEMA:
        schema = cert.get("schema") if isinstance(cert, Mapping) else None
        raise NotCertifiable(f"{where}: only textbook certificates ({_SCHEMA}) are transcribed, not {schema!r}")
    rows, size = cert.get("rows"), cert.get("vocab_size")
    if not isinstance(rows, list) or not rows:
        raise NotCertifiable(f"{where}: 'rows' must be a non-empty list")
    if not isinstance(size, int) or isinstance(size, bool) or size != len(rows):
        raise NotCertifiable(f"{where}: vocab_size {size!r} is not the number of rows, {len(rows)}")
    cols: dict[str, list[tuple[int, int]]] = {"p": [], "q": [], "emitted": []}
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping) or row.get("token") != i:
            raise NotCertifiable(f"{where}: row {i} is not token {i}")
        for key, col in cols.items():
            col.append(_number(row.get(key), f"{where}, token {i}, {key}"))
    totals, claims = cert.get("totals"), cert.get("claims")
    if not isinstance(totals, Mapping) or not isinstance(claims, Mapping):
        raise NotCertifiable(f"{where}: 'totals' and 'claims' must be objects")
    stated = {
        key: _number(totals.get(key), f"{where}, totals.{key}") for key in ("alpha", "tv", "normalizer", "rejection")
    }
    for key in ("dist_equals_p", "alpha_equals_one_minus_tv"):
        if not isinstance(claims.get(key), bool):
            raise NotCertifiable(f"{where}: claims.{key} must be true or false")
    rows_of = "(row R (size target) target) (row R (size target) draft)"
    lines = [
        f"(* {_comment(cert.get('name'))} *)",
        f"Definition target : seq Q := {_row(cols['p'])}.",
        f"Definition draft : seq Q := {_row(cols['q'])}.",
        f"Definition emitted : seq Q := {_row(cols['emitted'])}.",
        "",
        f"Theorem vocabulary : [/\\ size target = {size}%N, size draft = {size}%N & size emitted = {size}%N].",
        "Proof. by split; vm_compute. Qed.",
        "",
        "(** The textbook verifier of Spec.v on these rows emits token y with probability emitted[y]. *)",
        "Theorem law (R : numFieldType) (fallback : 'I_(size target) -> R) (y : 'I_(size target)) :",
        f"  verifier {rows_of} fallback y = row R (size target) emitted y.",
        f"Proof. by apply: verifier_on_rows; {_CHECK}. Qed.",
    ]
    if claims["dist_equals_p"]:
        lines += [
            "",
            "(** ... which is the target row: on these rows the verifier is lossless. *)",
            "Theorem lossless (R : numFieldType) (fallback : 'I_(size target) -> R) (y : 'I_(size target)) :",
            f"  verifier {rows_of} fallback y = row R (size target) target y.",
            f"Proof. by apply: verifier_on_rows; {_CHECK}. Qed.",
            "",
            "(** The total variation of the verifier's law from the target row is 0. *)",
            "Theorem TV_from_p (R : numFieldType) (fallback : 'I_(size target) -> R) :",
            f"  TV (verifier {rows_of} fallback) (row R (size target) target) = 0.",
            "Proof. by rewrite /TV big1 ?mul0r // => y _; rewrite lossless subrr normr0. Qed.",
        ]
    for name, spec, key, lemma in (
        ("alpha_is", "alpha", "alpha", "alpha_rows"),
        ("TV_is", "TV", "tv", "TV_rows"),
        ("normalizer_is", "residual_mass", "normalizer", "residual_mass_rows"),
        ("rejection_is", "rejection_prob", "rejection", "rejection_rows"),
    ):
        lines += [
            "",
            f"Theorem {name} (R : numFieldType) : {spec} {rows_of} = Q2R R ({_q(stated[key])}).",
            f"Proof. rewrite {lemma}; [apply/eqP; rewrite Q2R_eqb |]; {_CHECK}. Qed.",
        ]
    if claims["alpha_equals_one_minus_tv"]:
        lines += [
            "",
            f"Theorem alpha_is_1_minus_TV (R : numFieldType) : alpha {rows_of} = 1 - TV {rows_of}.",
            f"Proof. by rewrite alpha_is TV_is -(Q2R_1 R) -Q2R_sub; apply/eqP; rewrite Q2R_eqb; {_CHECK}. Qed.",
        ]
    lines += [
        "",
        "Theorem target_is_distribution (R : numFieldType) : is_distribution (row R (size target) target).",
        f"Proof. by apply: distribution_on_rows; {_CHECK}. Qed.",
        "",
        "Theorem draft_is_distribution (R : numFieldType) : is_distribution (row R (size target) draft).",
        "Proof.",
        "have same : size target = size draft by vm_compute.",
        f"by rewrite same; apply: distribution_on_rows; {_CHECK}.",
        "Qed.",
    ]
    return lines


def coq_text(doc: Mapping[str, Any]) -> str:
    """The Coq file for a textbook certificate or a bundle of them.

    Parameters
    ----------
    doc : mapping
        A parsed certificate (``specproof.certificate/1``) or bundle (``specproof.bundle/1``) of
        them, as :mod:`specproof.checker` reads it.

    Returns
    -------
    str
        A ``.v`` file: one ``Module C<i>`` per certificate, holding its rows and one theorem per
        stated value (see the module docstring), each proved by computation in Coq. It compiles
        with ``coqc -Q DIR SpecProof`` where DIR holds compiled :data:`COQ_SOURCES`.

    Raises
    ------
    NotCertifiable
        Another schema, a bundle of another kind, ``vocab_size`` other than the number of rows,
        tokens out of order, a malformed, negative or over-long (:data:`MAX_BITS`) number.

    Examples
    --------
    >>> from specproof.certify.certificate import build_certificate
    >>> text = coq_text(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="example"))
    >>> "Definition target : seq Q := [:: Qmake 1 2; Qmake 1 2]." in text
    True
    """
    if isinstance(doc, Mapping) and doc.get("schema") == _BUNDLE:
        certs = doc.get("certificates")
        if not isinstance(certs, list) or not certs:
            raise NotCertifiable("a bundle must hold a non-empty list of certificates")
    else:
        certs = [doc]
    out = [
        "(* Generated by specproof (specproof.certify.coq) from a certificate. The statements are",
        "   the certificate's values; every proof is a computation checked by Coq's kernel. *)",
        "From Coq Require Import QArith.",
        "From mathcomp Require Import all_ssreflect ssralg ssrnum.",
        "From SpecProof Require Import Spec Certify.",
        "Import GRing.Theory Num.Theory.",
        "Local Open Scope ring_scope.",
    ]
    for i, cert in enumerate(certs):
        out += ["", f"Module C{i}.", *_certificate(cert, f"certificate {i}"), f"End C{i}."]
    return "\n".join(out) + "\n"


def write_v(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write :func:`coq_text` of ``doc`` to ``path`` (a ``.v`` file; Coq needs its stem to be
    a Coq identifier) and return the path.

    Raises
    ------
    NotCertifiable
        As :func:`coq_text`, or a file name that is not ``IDENT.v``.
    """
    path = Path(path)
    if path.suffix != ".v" or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", path.stem):
        raise NotCertifiable(f"a Coq file name is IDENT.v (letters, digits, '_'), got {path.name!r}")
    path.write_text(coq_text(doc), encoding="utf-8", newline="\n")
    return path


def compile_files(
    paths: Sequence[str | Path], source_dir: str | Path | None = None, coqc: str | None = None
) -> list[dict[str, Any]]:
    """Compile generated certificate files with coqc, each against Spec.v and Certify.v.

    Parameters
    ----------
    paths : sequence of path
        ``.v`` files written by :func:`write_v`.
    source_dir : path, optional
        Directory holding :data:`COQ_SOURCES` (default ``proofs/coq`` of the source checkout). They
        are compiled in a scratch directory, which also receives copies of ``paths``.
    coqc : str, optional
        The coqc executable (default: ``coqc`` on PATH).

    Returns
    -------
    list of dict
        One per path: ``path``, ``ok`` (coqc exited 0), ``seconds`` (wall clock of that coqc run)
        and ``output`` (the end of its output).

    Raises
    ------
    NotCertifiable
        coqc is not found, a source is missing, or Spec.v or Certify.v does not compile.
    """
    from specproof.certify.symbolic_proof import COQ_DIR

    src = Path(source_dir) if source_dir is not None else COQ_DIR
    exe = shutil.which(coqc or "coqc")
    if exe is None:
        raise NotCertifiable(f"{coqc or 'coqc'} is not on PATH (Coq 8.16 with MathComp)")
    results = []
    with tempfile.TemporaryDirectory(prefix="specproof-coqcert-") as tmp:
        work = Path(tmp)
        for name in COQ_SOURCES:
            if not (src / name).is_file():
                raise NotCertifiable(f"{name} not found in {src}")
            shutil.copyfile(src / name, work / name)
            run = subprocess.run([exe, "-Q", ".", "SpecProof", *_FLAGS, name], cwd=work, capture_output=True, text=True)
            if run.returncode != 0:
                raise NotCertifiable(f"{name} does not compile: {(run.stdout + run.stderr)[-2000:]}")
        for i, path in enumerate(paths):
            local = work / f"Cert{i}_{Path(path).name}"
            shutil.copyfile(path, local)
            start = time.perf_counter()
            run = subprocess.run(
                [exe, "-Q", ".", "SpecProof", *_FLAGS, local.name], cwd=work, capture_output=True, text=True
            )
            results.append(
                {
                    "path": str(path),
                    "ok": run.returncode == 0,
                    "seconds": time.perf_counter() - start,
                    "output": (run.stdout + run.stderr)[-2000:],
                }
            )
    return results
