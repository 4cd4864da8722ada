"""Proof records (the SymPy proof for every V): not certificates, so not the checker's. ``specproof check``
refuses a record and says how to re-check it (:func:`refuse_record`); ``specproof prove --record FILE``
re-checks it by recomputing it (:func:`_check_record`), so SymPy is outside ``check``'s trusted base."""

from __future__ import annotations

from specproof.cli._common import _print_json, _say


def refuse_record(path: str, doc: dict, as_json: bool = False) -> int:
    """``specproof check`` on a proof record: exit 1 with why it is not checked and how to re-check it.

    A record states what a SymPy run proved; re-checking it means running SymPy again, and the checker
    trusts the standard library alone. ``specproof prove --record FILE`` re-runs the proof and compares.
    """
    detail = (
        f"a proof record ({doc['schema']}), not a certificate: the checker re-derives certificates with the "
        f"standard library alone and does not run SymPy; re-check the record with `specproof prove --record {path}` "
        "(it re-runs the SymPy proof and compares)"
    )
    if as_json:
        _print_json(
            {
                "command": "check",
                "file": path,
                "valid": False,
                "reason": "record",
                "detail": detail,
                "checker_version": None,
            }
        )
    else:
        _say(f"{path}: NOT CHECKED (record): {detail}")
    return 1


def _fresh_symbolic(checks: bool = True) -> dict:
    from specproof.certify.symbolic_proof import prove_every_v

    return prove_every_v(checks)


def _is_record(doc: object) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("schema"), str) and doc["schema"] in _RECORDS


#: Records that are not certificates: schema -> (what recomputes them, what it is called).
_RECORDS = {
    "specproof.symbolic-proof/1": (_fresh_symbolic, "the SymPy proof"),
}


#: The fields of a symbolic-proof record and of each of its steps, with their JSON types: a
#: record of any other shape is rejected before the SymPy proof is re-run (seconds of work).
_RECORD_FIELDS = {
    "assumptions": list,
    "conclusion": str,
    "formal_proof": dict,
    "name": str,
    "proved": bool,
    "schema": str,
    "statement": str,
    "steps": list,
    "sympy_version": str,
}
_RECORD_STEP_FIELDS = {"check", "claim", "id", "method", "result", "uses", "verified"}


def _record_shape(doc: dict) -> str:
    """ "" if ``doc`` has the fields of a symbolic-proof record (and its steps theirs), else why not."""
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

    def as_recorded(run: dict) -> dict:  # the SymPy version is provenance (which one wrote it), not a claim
        return {**run, "sympy_version": doc["sympy_version"]}

    expected = None if shape else as_recorded(fresh_fn(False))
    fresh = as_recorded(fresh_fn()) if expected == doc else None
    if shape:
        valid, detail = False, shape
    elif expected != doc:
        valid, detail = (
            False,
            (
                f"the record differs from a fresh run of {what} (from the record a run that "
                f"proves everything writes; the proof was not re-run)"
            ),
        )
    elif fresh != doc:
        valid, detail = False, f"the record differs from a fresh run of {what}"
    elif not fresh["proved"]:
        valid, detail = False, f"{what} did not prove everything"
    else:
        import sympy

        valid, detail = (
            True,
            (
                f"re-ran {what} under SymPy {sympy.__version__} (recorded under "
                f"{doc['sympy_version']}): it proves everything the record says"
            ),
        )
    if as_json:
        _print_json(
            {
                "command": "check",
                "file": path,
                "valid": valid,
                "reason": None if valid else "record",
                "detail": detail,
                "checker_version": None,
            }
        )
    elif valid:
        _say(f"{path}: valid ({detail})")
    else:
        _say(f"{path}: REJECTED (record): {detail}")
    return 0 if valid else 1
