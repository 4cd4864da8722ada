"""The hostile documents of an adversarial review (tests/data/trust/, see its README): each gets
the wanted verdict, the transcript path is as hard as the checker, and a transcript shows only
what the checker re-derived (every table cell compared after a real Markdown parser read it)."""

import json
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from specproof import checker
from specproof.checker import Reason, check, check_file
from specproof.cli import main
from specproof.report import transcript

CASES = Path(__file__).parent / "data" / "trust"


def _upgrade(doc):
    """A hostile document of schema /1 written in today's schema (same rows, nodes and claims;
    no tolerance field, which a document can no longer set), so that its kind is exercised."""
    if isinstance(doc, dict):
        if doc.get("schema") == "specproof.chain-certificate/1":
            doc["schema"] = checker.CHAIN_SCHEMA
            doc["rows"].pop("atol", None)
        if doc.get("schema") == "specproof.compact-certificate/1":
            doc["schema"] = checker.COMPACT_SCHEMA
            doc["inputs"].pop("atol", None)
        for cert in doc.get("certificates", []):
            _upgrade(cert)
    return doc


def _case(name):
    return _upgrade(json.loads((CASES / name).read_text(encoding="utf-8")))


def _generated(script, *args, tmp_path):
    out = tmp_path / f"{script}.json"
    subprocess.run([sys.executable, str(CASES / script), *map(str, args), str(out)], check=True)
    return out


def _tables(markdown):
    """Every table of a Markdown text as a list of rows of cell texts (markdown-it, GFM tables)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    tables, row, cell = [], None, None
    for tok in tokens:
        if tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close":
            tables[-1].append(row)
        elif tok.type in ("th_open", "td_open"):
            cell = []
        elif tok.type in ("th_close", "td_close"):
            row.append("".join(cell))
        elif tok.type == "inline" and cell is not None:
            cell.append("".join(child.content for child in tok.children or []))
    return tables


def _table_with(markdown, column):
    """The one table of a Markdown text whose header has ``column``."""
    (table,) = [t for t in _tables(markdown) if column in t[0]]
    return table


def _headings(markdown):
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    return [tokens[i + 1].content for i, tok in enumerate(tokens) if tok.type == "heading_open"]


# ---------------------------------------------------------------- the checker's cost


def test_the_old_schemas_are_refused_by_name():
    for name in ("dos_chain_bignum_18KB.json", "pipe_injection_chain.json", "atol_not_distribution.json"):
        verdict = check_file(CASES / name)
        assert verdict.reason is Reason.SCHEMA and "/1" in verdict.detail


def test_many_nodes_times_a_large_vocabulary_is_checked_once_per_row_pair(tmp_path):
    # 511 nodes at V = 8000, one pair of rows: valid; the checker works once per distinct pair
    doc = _upgrade(json.loads(_generated("gen_dos_chain.py", 8000, 9, tmp_path=tmp_path).read_text()))
    verdict = check(doc)
    assert verdict.valid, verdict
    facts = verdict.facts[0]
    assert (facts["nodes"], facts["row_pairs"]) == (511, 1)
    assert facts["expected_emitted"].num == 10 * facts["expected_emitted"].den  # gamma + 1 = 10


def test_reach_is_checked_against_the_parent_claim_so_numbers_do_not_grow(tmp_path):
    # rows renormalized by 1 + 2^-1074: unreduced products would gain ~1075 bits a level
    for doc in (
        _case("dos_chain_bignum_18KB.json"),
        _upgrade(json.loads(_generated("gen_dos_chain_bignum.py", 1000, 80, tmp_path=tmp_path).read_text())),
    ):
        verdict = check(doc)
        assert verdict.valid, verdict
        gamma = doc["gamma"]
        lengths = verdict.facts[0]["accepted_length"]
        assert [Fraction(x.num, x.den) for x in lengths] == [Fraction(1, 2 ** (k + 1)) for k in range(gamma)] + [
            Fraction(1, 2**gamma)
        ]
        # the sums are as small as the claims: no 1075-bit factor per level survives
        assert max(x.den.bit_length() for x in lengths) < 4 * (gamma + 1) ** 2


def test_a_document_listing_too_few_nodes_is_rejected_without_enumerating_the_rest(tmp_path):
    doc = _upgrade(json.loads(_generated("gen_dos_chain.py", 8000, 9, tmp_path=tmp_path).read_text()))
    doc["nodes"] = doc["nodes"][:3]
    verdict = check(doc)
    assert (
        verdict.reason is Reason.NODES and "lists 3 nodes; the verifier accepts at least 7 prefixes" in verdict.detail
    )


# ---------------------------------------------------------------- the transcript path


def test_a_gamma_3000_chain_renders_without_huge_powers(tmp_path):
    doc = _upgrade(json.loads(_generated("gen_dos_transcript.py", 3000, tmp_path=tmp_path).read_text()))
    verdict = check(doc)
    assert verdict.valid, verdict
    text = transcript.render(doc, verdict)
    (row,) = _table_with(text, "gamma")[1:]
    assert row[2] == "3000"
    mean = verdict.facts[0]["mean_alpha"]
    assert mean.den.bit_length() > 1000
    assert row[7] == transcript._digits(mean)  # 12 digits from the verified mean alpha


def test_pipes_in_free_text_add_no_table_cells():
    doc = _case("pipe_injection_chain.json")
    verdict = check(doc)
    assert verdict.valid
    text = transcript.render(doc, verdict)
    header, *rows = _table_with(text, "gamma")
    assert len(rows) == len(verdict.facts)
    for row, facts, cert in zip(rows, verdict.facts, doc["certificates"] if "certificates" in doc else [doc]):
        assert len(row) == len(header) == 11
        assert row[0] == " ".join(cert["name"].split())  # the whole name, pipes and all, in one cell
        assert (row[2], row[3], row[4]) == (str(facts["gamma"]), str(cert["vocab_size"]), str(facts["nodes"]))
        assert row[6] == transcript._digits(facts["expected_emitted"])
        assert row[7] == transcript._digits(facts["mean_alpha"])
    assert _headings(text).count("Verdict") == 1


@pytest.mark.parametrize(
    "text",
    ["a | b", "x\n# heading", "<script>alert(1)</script>", "**bold** _i_ [l](u)", "`code` \\| ~~s~~ &lt;", "| --- |"],
)
def test_free_text_is_inert_markdown(text):
    cell = transcript._plain(text)
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(f"| h |\n|---|\n| {cell} |\n")
    body = rendered.split("<td>")[1].split("</td>")[0]
    # what a reader sees is the text itself, on one line, in one cell
    import html

    assert html.unescape(body) == " ".join(text.split())
    assert rendered.count("<td>") == 1


def test_residual_carriers_come_from_the_recomputed_law():
    doc = _case("compact_hidden_carrier_bundle.json")
    verdict = check(doc)
    assert verdict.valid
    text = transcript.render(doc, verdict)
    summary = _table_with(text, "residual mass on")
    column = summary[0].index("residual mass on")
    assert summary[1][column].startswith("0 93%"), summary[1]


def test_hex_numbers_render():
    doc = _case("hex_valid_unrenderable.json")
    verdict = check(doc)
    assert verdict.valid
    assert main(["transcript", str(CASES / "hex_valid_unrenderable.json")]) == 0
    assert "alpha = 3/4" in transcript.render(doc, verdict)


def test_lone_surrogates_are_rejected_everywhere(capsys):
    assert check_file(CASES / "surrogate_label.json").reason is Reason.MALFORMED
    assert check(_case("surrogate_label.json")).reason is Reason.MALFORMED
    assert main(["check", str(CASES / "surrogate_label.json")]) == 1
    assert "lone surrogate" in capsys.readouterr().out


# ---------------------------------------------------------------- tolerance and parsing


def test_a_document_cannot_choose_its_tolerance():
    doc = json.loads((CASES / "atol_not_distribution.json").read_text())
    doc["schema"] = checker.COMPACT_SCHEMA
    assert check(doc).reason is Reason.MALFORMED  # its "atol" field is not part of the schema
    verdict = check(_case("atol_not_distribution.json"))  # without it: p sums to 1/4
    assert verdict.reason is Reason.NOT_NORMALIZED
    assert "inputs.p" in verdict.detail and "1/1000" in verdict.detail


def test_one_parsing_path_for_records_and_certificates(capsys):
    # repeated keys: the CLI's record path and check_file reject the same bytes
    assert check_file(CASES / "dupkey_record.json").reason is Reason.MALFORMED
    assert main(["check", str(CASES / "dupkey_record.json")]) == 1
    assert "repeats the key" in capsys.readouterr().out
    assert main(["transcript", str(CASES / "dupkey_record.json")]) == 2
    assert main(["prove", "--record", str(CASES / "dupkey_record.json")]) == 1
    assert "repeats the key" in capsys.readouterr().out


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-32"])
def test_encodings_json_allows_are_read(encoding):
    text = (CASES / "toctou_genuine.json").read_text(encoding="utf-8")
    assert check(text.encode(encoding)).valid


def test_nan_constants_are_not_rational():
    text = (CASES / "toctou_genuine.json").read_text(encoding="utf-8").replace('"3/4"', "NaN", 1)
    assert check(text.encode()).reason is Reason.NOT_RATIONAL


def test_transcript_reads_its_file_once(tmp_path, capsys, monkeypatch):
    # a file that changes between reads (a FIFO, a rewrite) must not get a rejected document
    # rendered as PROVED: the CLI reads the bytes once, and checks and renders those bytes
    path = tmp_path / "cert.json"
    path.write_bytes((CASES / "toctou_fake.json").read_bytes())
    reads = []
    real_read = checker.read
    genuine = (CASES / "toctou_genuine.json").read_bytes()

    def read_then_swap(p):
        reads.append(p)
        data = real_read(p)
        with open(path, "wb") as handle:  # the file changes right after the read
            handle.write(genuine)
        return data

    monkeypatch.setattr(checker, "read", read_then_swap)
    for method in ("read_bytes", "read_text"):
        real = getattr(Path, method)
        monkeypatch.setattr(
            Path,
            method,
            lambda self, *a, real=real, **k: (
                pytest.fail(f"second read of {self}") if self == path else real(self, *a, **k)
            ),
        )
    assert main(["transcript", str(path)]) == 1
    out = capsys.readouterr().out
    assert len(reads) == 1
    assert "**Verdict: REJECTED**" in out and "PROVED" not in out


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.glob("*.json")))
def test_every_case_renders_only_whole_tables_or_is_rejected(name):
    doc = _case(name)
    verdict = check(doc)
    if not verdict.valid:
        assert verdict.reason is not None and verdict.detail
        return
    text = transcript.render(doc, verdict)
    assert _headings(text)[-1] == "Verdict" and ("**Verdict: PROVED**" in text or "**Checked: VALID**" in text)
    for table in _tables(text):
        assert {len(row) for row in table} == {len(table[0])}, table[0]


def test_transcripts_show_the_fixed_tolerance_and_raw_sums():
    doc = _case("compact_hidden_carrier_bundle.json")
    text = transcript.render(doc, check(doc))
    assert "within 1/1000 of 1 (its own fixed tolerance; a certificate cannot set it)" in text
    # p = [0.7, 0.1, 0.2] and q = [0.05, 0.05, 0.9] as float64, whose exact sums are 1 - 2^-55 and 1 + 2^-55
    assert "Raw sums: p 1 − 2.77556e-17, q 1 + 2.77556e-17." in text


# ---------------------------------------------------------------- outcome certificates (second review)


@pytest.mark.parametrize("name", ["reference_not_target_accept_all.json", "extra_input_row_as_reference.json"])
def test_the_reference_is_the_target(name):
    """A lossy verifier cannot be shown lossless by measuring against another row than p."""
    verdict = check((CASES / name).read_bytes())
    assert not verdict.valid and verdict.reason is Reason.MALFORMED, verdict


def test_a_tree_that_never_reads_q_is_not_bound_to_q(tmp_path, capsys):
    """The tree (trusted to be the rule's program) may compute anything from its rows; binding it
    to --target/--draft binds only the inputs it reads, and says which it does not read."""
    path = CASES / "unused_draft_accept_all.json"
    verdict = check(path.read_bytes())
    assert verdict.valid and verdict.facts[0]["reads"] == ["p"]
    doc = json.loads(path.read_text())
    p, q = tmp_path / "p.json", tmp_path / "q.json"
    p.write_text(json.dumps(doc["rows"]["p"]["values"]))
    q.write_text(json.dumps(doc["rows"]["q"]["values"]))
    assert main(["check", str(path), "--target", str(p), "--draft", str(q), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bound_to_inputs"] is True and out["unread_inputs"] == ["q"]
    assert main(["check", str(path), "--target", str(p), "--draft", str(q)]) == 0
    assert "q not read by the certified tree" in capsys.readouterr().out


def test_a_huge_vocabulary_needs_rows_that_hold_it():
    verdict = check((CASES / "uniform_vocab_1000000000.json").read_bytes())  # 395 bytes claiming V = 10^9
    assert not verdict.valid and verdict.reason is Reason.MISSING_FIELD


def test_derived_rows_cannot_grow_past_the_row_limit(tmp_path):
    """Recipes whose values double in size each step: rejected at the row limit, in well under a
    second (bench_checker.py times the valid documents of this kind near every limit)."""
    verdict = check_file(_generated("gen_dos_outcome_growth.py", 40, tmp_path=tmp_path))
    assert not verdict.valid and verdict.reason is Reason.MALFORMED
    assert "common denominator of" in verdict.detail or "an entry above 1" in verdict.detail


def test_malformed_branches_do_not_pay_for_derived_rows():
    verdict = check((CASES / "dos_outcome_growth_40_junk_branches.json").read_bytes())
    assert not verdict.valid and verdict.reason is Reason.MALFORMED and "branches[0]" in verdict.detail


def test_a_bundle_holds_one_kind_of_certificate(capsys, tmp_path):
    path = CASES / "mixed_bundle_outcome_plus_position.json"
    assert check(path.read_bytes()).reason is Reason.SCHEMA
    out = tmp_path / "t.md"
    assert main(["transcript", str(path), "--out", str(out)]) == 1  # rendered as rejected, with its reason
    assert "**Verdict: REJECTED**" in out.read_text(encoding="utf-8")
    assert "Traceback" not in capsys.readouterr().err


def test_json_numbers_are_neither_names_nor_rationals():
    """The text path and the object path give the same verdict: a JSON number that is not an
    integer (or NaN) is no row name, as a Python float is none."""
    text = (CASES / "number_literal_row_names.json").read_text()
    by_text = check(text)
    assert not by_text.valid
    assert check(json.loads(text)).valid is False
    assert not check('{"schema": 0.5}').valid and not check({"schema": 0.5}).valid


def test_object_keys_must_be_strings():
    doc = json.loads((CASES / "unused_draft_accept_all.json").read_text())
    doc["rows"][1] = doc["rows"].pop("draft")
    verdict = check(doc)
    assert not verdict.valid and verdict.reason is Reason.MALFORMED


def test_statements_cannot_start_markdown_blocks():
    doc = json.loads((CASES / "statement_markdown_list.json").read_text())
    verdict = check(doc)
    assert doc["statement"].startswith("- ")
    text = transcript.render(doc, verdict)
    statement = text.split("## Statement\n", 1)[1].split("\n", 1)[0]
    tokens = MarkdownIt("commonmark").enable("table").parse(statement)
    assert [t.type for t in tokens][:1] == ["paragraph_open"]
    for line in ("- a", "+ b", "1. c", "2) d", "---", "=== e"):
        first = MarkdownIt("commonmark").parse(transcript._plain(line))[0].type
        assert first == "paragraph_open", line


# ---------------------------------------------------------------- third review (issue 18)


def _costly(*argv):
    """Run ``python -m specproof ARGV`` and return (exit status, stdout, stderr, CPU s, peak MB)."""

    script = (
        "import resource, sys, runpy; sys.argv = ['specproof'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('specproof', run_name='__main__')\n"
        "except SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        "u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "peak = u.ru_maxrss  # VmHWM: this process's own peak (ru_maxrss may count the forking parent's)\n"
        "try:\n    peak = int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])\n"
        "except (OSError, StopIteration):\n    pass\n"
        "sys.stderr.write(f'\\nCOST {u.ru_utime + u.ru_stime} {peak}\\n')\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, argv)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    err, _, cost = done.stderr.rpartition("\nCOST ")
    cpu, rss = cost.split()
    return done.returncode, done.stdout, err, float(cpu), int(rss) / 1024


#: The issue's bounds for any hostile document under 100 KB: CPU seconds and peak memory (MB).
CPU_LIMIT, MEMORY_LIMIT = 5.0, 500


@pytest.mark.parametrize("kind", ["outcome", "block"])
def test_unreduced_claims_cost_one_comparison(kind, tmp_path):
    """Claims written X/X and j/(300 j) are only compared; sums are of re-derived values (item 1)."""
    path = tmp_path / "u.json"
    subprocess.run([sys.executable, str(CASES / "gen_dos_outcome_unreduced.py"), "99", str(path), kind], check=True)
    assert 95_000 < path.stat().st_size < 100_000
    verdict = check_file(path)
    assert verdict.valid and verdict.facts[0]["claims"]["lossless"]
    for command in ("check", "transcript"):
        code, out, err, cpu, memory = _costly(command, path)
        assert code == 0 and "Traceback" not in err and cpu < CPU_LIMIT and memory < MEMORY_LIMIT, (
            command,
            cpu,
            memory,
        )


def test_masses_are_capped(monkeypatch):
    """A re-derived mass over more than MAX_MASS_BITS bits is rejected, not summed."""
    path = CASES / "backtick_code_span_injection.json"
    assert check(path.read_bytes()).valid
    monkeypatch.setattr(checker, "MAX_MASS_BITS", 2)
    verdict = check(path.read_bytes())
    assert verdict.reason is Reason.MALFORMED and "a mass over a denominator of" in verdict.detail


def test_rows_memory_is_bounded_by_the_document(tmp_path):
    """V = 15,000 and 24 derived rows of 16,000-bit entries: rejected before the rows are built (item 2)."""
    path = tmp_path / "rows.json"
    subprocess.run([sys.executable, str(CASES / "gen_dos_rows_memory.py"), "99", str(path)], check=True)
    verdict = check_file(path)
    assert verdict.reason is Reason.MALFORMED and "the rows hold more than" in verdict.detail
    for command in ("check", "transcript"):
        code, _, err, cpu, memory = _costly(command, path)
        assert code == 1 and "Traceback" not in err and cpu < CPU_LIMIT and memory < MEMORY_LIMIT, (
            command,
            cpu,
            memory,
        )


def test_input_lengths_are_checked_before_any_row_is_derived():
    """A uniform row listed before p cannot be built at the claimed V (item 2)."""
    verdict = check((CASES / "uniform_before_p_vocab_100000000.json").read_bytes())
    assert verdict.reason is Reason.TOKENS and "rows.p.values" in verdict.detail
    code, _, _, cpu, memory = _costly("check", CASES / "uniform_before_p_vocab_100000000.json")
    assert code == 1 and cpu < 1 and memory < 100


def test_repeated_keys_are_found_in_one_pass(tmp_path):
    path = tmp_path / "keys.json"
    subprocess.run([sys.executable, str(CASES / "gen_dos_repeated_keys.py"), "99", str(path)], check=True)
    start = time.process_time()
    verdict = check_file(path)
    assert verdict.reason is Reason.MALFORMED and "repeats the key" in verdict.detail
    assert time.process_time() - start < 0.5


def test_a_record_is_checked_for_shape_before_sympy_runs():
    for command in (("prove", "--record"), ("transcript",)):
        code, out, err, cpu, _ = _costly(*command, CASES / "symbolic_record_no_fields.json")
        assert code == 1 and "a record has exactly the fields" in out + err and cpu < 2, (command, cpu)
    code, out, err, cpu, _ = _costly("check", CASES / "symbolic_record_no_fields.json")  # not check's: refused
    assert code == 1 and "NOT CHECKED (record)" in out and cpu < 2, cpu


def test_binding_names_the_unbound_proposal(capsys):
    """A tree drafting from the input row `proposal` is not reported as bound to --draft (item 4)."""
    path = CASES / "proposal_unbound_accept_all.json"
    files = ["--target", CASES / "proposal_unbound_p.json", "--draft", CASES / "proposal_unbound_q.json"]
    assert main(["check", str(path), *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert "read by the tree but bound to nothing (the certificate's own values): proposal" in out
    assert main(["check", str(path), *map(str, files), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bound_to_inputs"] is False and report["unbound_rows"] == ["proposal"]
    assert report["bound_rows"] == ["p", "q"]
    # the same verifier (accept every draft) built from the real q is LOSSY
    from specproof.certify.certificate import build_outcome_certificate
    from specproof.rules.audit import position_law
    from specproof.rules.policy import named_rule

    p, q = (json.loads((CASES / f"proposal_unbound_{k}.json").read_text()) for k in "pq")
    real = check(build_outcome_certificate(position_law(p, q, named_rule("accept-all")).tree, name="a", statement="s"))
    assert real.valid and not real.facts[0]["claims"]["lossless"] and real.facts[0]["reads"] == ["p", "q"]


def test_a_given_reference_is_named_and_binds_nothing(capsys):
    path = CASES / "reference_argmax_of_given_row.json"
    verdict = check(path.read_bytes())
    assert verdict.facts[0]["reference_source"] == "argmax of given row g"
    files = ["--target", CASES / "proposal_unbound_p.json", "--draft", CASES / "proposal_unbound_q.json"]
    assert main(["check", str(path), *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert "p is exactly" not in out and "no row of the certificate was compared with --target or --draft" in out
    assert "LOSSLESS (reference: argmax of given row g)" in out
    assert main(["check", str(path), *map(str, files), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bound_rows"] == [] and report["unread_inputs"] == ["p", "q"] and report["bound_to_inputs"] is False
    assert report["reference"] == ["argmax of given row g"]


def test_cli_and_check_file_agree_on_mixed_bundles(capsys):
    path = CASES / "mixed_bundle_outcome_plus_position.json"
    assert check_file(path).reason is Reason.SCHEMA
    assert main(["check", str(path)]) == 1
    assert "REJECTED (schema)" in capsys.readouterr().out


def test_a_huge_tv_is_printed_and_lossy(capsys):
    """A valid LOSSY certificate with a 15,001-bit TV: the LOSSY line in text, the exact TV in
    --json (hexadecimal, as the checker reads it), exit 0; exit 1 with --require-lossless (items 6, 8)."""
    path = CASES / "lossy_tv_15000_bits.json"
    tv = check_file(path).facts[0]["totals"]["tv"]
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "the certified verifier is LOSSY (exact TV 0.2035" in out and "reference: p)" in out and "sha256" in out
    assert main(["check", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    num, den = (int(x, 16) for x in report["tv"][0].split("/"))
    assert Fraction(num, den) == Fraction(tv.num, tv.den) and report["tv_approx"][0].startswith("0.2035")
    assert main(["check", str(path), "--require-lossless"]) == 1
    assert "--require-lossless: failed (exit 1): the certified verifier is not lossless" in capsys.readouterr().out
    assert main(["check", str(path), "--require-lossless", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["required_lossless"] is False
    lossless = CASES / "backtick_code_span_injection.json"
    assert main(["check", str(lossless), "--require-lossless"]) == 0
    assert "LOSSLESS (reference: p)" in capsys.readouterr().out


def test_deep_provenance_renders(tmp_path):
    verdict = check((CASES / "provenance_850_deep.json").read_bytes())
    text = transcript.render(_case("provenance_850_deep.json"), verdict)
    assert "| nest | (nested more than 8 levels deep: not shown) |" in text
    deep = tmp_path / "deep.json"  # the review's 985 levels (the test runner's stack leaves less room)
    deep.write_text(
        (CASES / "provenance_850_deep.json").read_text().replace("[" * 850, "[" * 985).replace("]" * 850, "]" * 985)
    )
    code, out, err, cpu, memory = _costly("transcript", deep)
    assert code == 0 and "Traceback" not in err and "not shown" in out


@pytest.mark.parametrize(
    "name", ["rejected_missing_total.json", "rejected_total_zero_denominator.json", "control_chars_rejected.json"]
)
def test_rejected_documents_render_only_the_reason(name):
    code, out, err, _, _ = _costly("transcript", CASES / name)
    assert code == 1 and "Traceback" not in err and "**Verdict: REJECTED**" in out
    assert "## Per-token law" not in out and "1/4" not in out  # none of the claimed values


def test_code_spans_cannot_be_broken():
    """Names with backtick runs, HTML and a bold link stay inside their code spans (item 7)."""
    doc = _case("backtick_code_span_injection.json")
    text = transcript.render(doc, check(doc))
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    inline = [child for tok in tokens if tok.children for child in tok.children]
    assert not [t for t in inline if t.type in ("html_inline", "link_open", "image")]
    assert not [t for t in tokens if t.type == "html_block"]
    spans = [t.content for t in inline if t.type == "code_inline"]
    assert any("<img src=x onerror=alert(1)>" in s and "**[click]" in s for s in spans)
    for text in ("a`b", "``x", "x``", "` a `", "<b>"):
        (tok,) = MarkdownIt("commonmark").parseInline(transcript._code(text))[0].children
        assert tok.type == "code_inline" and tok.content == text, text


@pytest.mark.parametrize("name", ["control_chars_row_names.json", "control_chars_rejected.json"])
def test_no_control_character_reaches_the_terminal(name):
    import unicodedata

    for command, extra in (("check", ()), ("check", ("--json",)), ("transcript", ())):
        code, out, err, _, _ = _costly(command, CASES / name, *extra)
        assert code in (0, 1) and "Traceback" not in err
        shown = [c for c in out + err if c != "\n" and (unicodedata.category(c) == "Cc" or c == "\u202e")]
        assert not shown, shown
    code, out, _, _, _ = _costly("check", CASES / "control_chars_row_names.json")
    assert "LOSSY (exact TV 0.5 (1/2); reference: p)" in out


def test_unreduced_position_entries_do_not_inflate_the_law(tmp_path, monkeypatch):
    """A one-position certificate's p and q written (k n)/(k d): entries are reduced before their
    common denominator is taken, and V x bits(lcm(p, q)) is bounded before the law is built."""
    path = tmp_path / "pos.json"
    subprocess.run(
        [sys.executable, str(CASES / "gen_dos_position_unreduced.py"), "99", str(path)],
        check=True,
        env={**__import__("os").environ, "PYTHONPATH": str(Path(checker.__file__).parents[1])},
    )
    verdict = check_file(path)
    assert verdict.valid and verdict.facts[0]["law"].den.bit_length() < 64
    code, _, err, cpu, memory = _costly("check", path)
    assert code == 0 and cpu < CPU_LIMIT and memory < MEMORY_LIMIT, (cpu, memory)
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", 0)
    monkeypatch.setattr(checker, "STATED_ROW_BITS_PER_CHAR", 0)
    verdict = check_file(path)
    assert verdict.reason is Reason.MALFORMED and "p and q over a common denominator of" in verdict.detail


def test_a_tampered_record_is_rejected_without_running_the_proof(monkeypatch, capsys):
    """A well-formed record with one result altered (the last step's) is compared with the record
    a proving run writes, built without running a check: rejected, SymPy never reduces anything."""
    from specproof.certify import symbolic_proof

    def no_run(*args, **kwargs):
        raise AssertionError("the SymPy proof ran")

    monkeypatch.setattr(symbolic_proof, "check_identity", no_run)
    monkeypatch.setattr(symbolic_proof, "check_sum_identity", no_run)
    path = CASES / "symbolic_record_tampered_result.json"
    assert main(["prove", "--record", str(path)]) == 1
    out = capsys.readouterr().out
    assert "REJECTED (record)" in out and "the proof was not re-run" in out
    assert main(["transcript", str(path)]) == 1
    genuine = json.loads(path.read_text())
    genuine["steps"][-2]["result"] = "b = a + t: 0"
    assert genuine == {**symbolic_proof.prove_every_v(checks=False), "sympy_version": genuine["sympy_version"]}
    for command in (("prove", "--record"), ("transcript",)):
        code, out, err, cpu, _ = _costly(*command, path)
        assert code == 1 and "the proof was not re-run" in out + err and cpu < CPU_LIMIT, (command, cpu)


def test_the_record_a_proving_run_writes_is_the_run():
    from specproof.certify.symbolic_proof import prove_every_v

    assert prove_every_v(checks=False) == prove_every_v()


@pytest.mark.parametrize("kind", ["outcome", "block"])
def test_masses_at_the_limit_stay_cheap(kind, tmp_path):
    """Masses re-derived over denominators up to MAX_MASS_BITS while every claim is small (a row
    whose draw is 1/2 written M/(2M)): 99 KB checked or rejected within the bounds."""
    path = tmp_path / "m.json"
    subprocess.run(
        [sys.executable, str(CASES / "gen_dos_mass_bits.py"), "99", str(path), str(checker.MAX_MASS_BITS), kind],
        check=True,
    )
    assert 85_000 < path.stat().st_size < 100_000
    verdict = check_file(path)
    if kind == "outcome":  # the law sums masses of different depths: over the limit, at token 0
        assert verdict.reason is Reason.MALFORMED and verdict.detail.startswith("certificate.law[0]: a mass over")
    else:  # walked and summed at the limit; the stream TV is not the claimed 0
        assert verdict.reason is Reason.TOTAL and "stream_tv" in verdict.detail
    for command in ("check", "transcript"):
        code, _, err, cpu, memory = _costly(command, path)
        assert code == 1 and "Traceback" not in err and cpu < CPU_LIMIT and memory < MEMORY_LIMIT, (
            command,
            cpu,
            memory,
        )


@pytest.mark.parametrize(
    "name, detail",
    [
        ("float_product_unhashable_coin.json", "counts the coins of its own grid"),  # was a TypeError
        ("float_product_other_coin_model.json", "counts the coins of its own grid"),  # was accepted
        ("float_product_upper_not_strict.json", "counts the coins of its own grid"),  # was accepted
    ],
)
def test_a_float_product_threshold_is_used_only_as_the_float_test(name, detail):
    """fl(u * q) < p counts the passing coins of its own grid: an upper end u < t (strict), or the
    failing ones as a lower end u >= t; another coin model or strictness is another event."""
    verdict = check((CASES / name).read_bytes())
    assert verdict.reason is Reason.MALFORMED and detail in verdict.detail


def test_derived_float_rows_are_charged_to_the_rows_budget(tmp_path):
    path = tmp_path / "f.json"
    subprocess.run([sys.executable, str(CASES / "gen_dos_float_rows.py"), "99", str(path)], check=True)
    verdict = check_file(path)
    assert verdict.reason is Reason.MALFORMED and "the rows hold more than" in verdict.detail
    code, _, err, cpu, memory = _costly("check", path)
    assert code == 1 and "Traceback" not in err and cpu < CPU_LIMIT and memory < MEMORY_LIMIT, (cpu, memory)


def test_no_document_can_name_the_kernels_every_token_draw():
    """``{"every": row}`` is a draw the kernel's own position trees use; in a document it is no
    known event, alone or beside a draw."""
    from specproof.certify.certificate import build_outcome_certificate, dumps
    from specproof.rules.audit import position_law

    cert = json.loads(
        dumps(build_outcome_certificate(position_law(["1/2", "1/2"], ["1/4", "3/4"]).tree, name="e", statement="s"))
    )
    assert check(cert).valid
    for event in ({"every": "p"}, {"every": "p", "draw": {"row": "p", "token": 0}}):
        forged = json.loads(json.dumps(cert))
        forged["nodes"][0]["branches"][0]["event"] = event
        verdict = check(forged)
        assert verdict.reason is Reason.MALFORMED and "not one known event" in verdict.detail


def test_a_reach_over_the_mass_limit_is_named_at_its_node(monkeypatch):
    """Node 3 has two parents, whose masses 1/6 and 2/3 sum over 6 x 3 = 18 (5 bits): with
    MAX_MASS_BITS = 4 the reach of node 3 is rejected, and the message names that reach."""

    def coin(lower, upper):
        bound = lambda strict: {"source": ["const", "1/3"], "strict": strict}  # noqa: E731
        return {
            "coin": {
                "model": "continuous",
                "lower": bound(False) if lower else None,
                "upper": bound(True) if upper else None,
            }
        }

    def draw(t):
        return {"draw": {"row": "p", "token": t}}

    def node(label, reach, branches):
        return {
            "label": label,
            "reach": reach,
            "branches": [{"event": e, "probability": pr, "child": c} for e, pr, c in branches],
        }

    leaf = lambda t: {"leaf": [t, True]}  # noqa: E731
    doc = {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": 2,
        "reference": "p",
        "rows": {"p": {"recipe": ["input", "p"], "values": ["1/2", "1/2"]}},
        "nodes": [
            node("root", "1/1", [(coin(False, True), "1/3", 1), (coin(True, False), "2/3", 2)]),
            node("a", "1/3", [(draw(0), "1/2", 3), (draw(1), "1/2", leaf(1))]),
            node("b", "2/3", [({"choice": {"condition": ["always"]}}, "1/1", 3)]),
            node("c", "5/6", [(draw(0), "1/2", leaf(0)), (draw(1), "1/2", leaf(1))]),
        ],
        "law": ["5/12", "7/12"],
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "1/12"},
        "claims": {"lossless": False},
    }
    assert check(doc).valid
    monkeypatch.setattr(checker, "MAX_MASS_BITS", 4)
    verdict = check(doc)
    assert verdict.reason is Reason.MALFORMED and verdict.detail.startswith("certificate.nodes[3].reach: a mass over")


def test_a_branch_sum_over_the_mass_limit_is_named_at_the_branches(monkeypatch):
    """A draw of 1/2 (over 2) and a coin u >= 2/4 (over 4) sum over 8 (4 bits): with MAX_MASS_BITS
    = 3 the root's branches are rejected, and the message names them."""
    doc = {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": 2,
        "reference": "p",
        "rows": {"p": {"recipe": ["input", "p"], "values": ["1/2", "1/2"]}},
        "nodes": [
            {
                "label": "root",
                "reach": "1/1",
                "branches": [
                    {"event": {"draw": {"row": "p", "token": 0}}, "probability": "1/2", "child": {"leaf": [0, True]}},
                    {
                        "event": {
                            "coin": {
                                "model": "continuous",
                                "upper": None,
                                "lower": {"source": ["const", "2/4"], "strict": False},
                            }
                        },
                        "probability": "1/2",
                        "child": {"leaf": [1, True]},
                    },
                ],
            }
        ],
        "law": ["1/2", "1/2"],
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
        "claims": {"lossless": True},
    }
    assert check(doc).valid
    monkeypatch.setattr(checker, "MAX_MASS_BITS", 3)
    verdict = check(doc)
    assert verdict.reason is Reason.MALFORMED and verdict.detail.startswith(
        "certificate.nodes[0].branches: a mass over"
    )


def test_a_single_mass_over_the_limit_is_rejected_where_it_is_made(monkeypatch):
    """Each token's law is one mass over 4 (3 bits), so no later sum merges anything: with
    MAX_MASS_BITS = 2 the mass is rejected where the walk multiplies it, at node 1's branches."""

    def draws(child):
        return [{"event": {"draw": {"row": "p", "token": t}}, "probability": "1/2", "child": child(t)} for t in (0, 1)]

    doc = {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": 2,
        "reference": "p",
        "rows": {"p": {"recipe": ["input", "p"], "values": ["1/2", "1/2"]}},
        "nodes": [
            {"label": "root", "reach": "1/1", "branches": draws(lambda t: 1 + t)},
            {"label": "a", "reach": "1/2", "branches": draws(lambda t: {"leaf": [0, True]})},
            {"label": "b", "reach": "1/2", "branches": draws(lambda t: {"leaf": [1, True]})},
        ],
        "law": ["1/2", "1/2"],
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
        "claims": {"lossless": True},
    }
    assert check(doc).valid
    monkeypatch.setattr(checker, "MAX_MASS_BITS", 2)
    verdict = check(doc)
    assert verdict.reason is Reason.MALFORMED and verdict.detail.startswith(
        "certificate.nodes[1].branches: a mass over"
    )


def test_a_token_no_leaf_reaches_costs_no_bit_of_the_mass_limit(monkeypatch):
    """Token 2 has no leaf (its law is 0 over 1): the TV's sum is accepted at the smallest limit
    that holds its denominators, and rejected one bit below."""

    def draws(child):
        return [{"event": {"draw": {"row": "p", "token": t}}, "probability": "1/2", "child": child(t)} for t in (0, 1)]

    doc = {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": 3,
        "reference": "q",
        "rows": {
            "p": {"recipe": ["input", "p"], "values": ["1/2", "1/2", "0/1"]},
            "q": {"recipe": ["given"], "values": ["1/3", "1/3", "1/3"]},
        },
        "nodes": [{"label": "root", "reach": "1/1", "branches": draws(lambda t: {"leaf": [t, True]})}],
        "law": ["1/2", "1/2", "0/1"],
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "1/3"},
        "claims": {"lossless": False},
    }
    assert check(doc).valid
    limit = next(b for b in range(1, 64) if monkeypatch.setattr(checker, "MAX_MASS_BITS", b) or check(doc).valid)
    monkeypatch.setattr(checker, "MAX_MASS_BITS", limit - 1)
    verdict = check(doc)
    assert verdict.reason is Reason.MALFORMED and verdict.detail.startswith("certificate.totals.tv: a mass over")
    assert limit == 5  # gaps over 2 x 3 and 1 x 3: their sum over 18 (5 bits)
