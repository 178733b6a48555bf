"""Result documents made from their runs (issue 40): scripts/results_docs.py regenerates every docs/results
document that has a template, from its kept run and the kept runs it declares, and checks its prose and every
kept run's defaults; every other document says that its tables are not regenerable."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
spec = importlib.util.spec_from_file_location("results_docs", ROOT / "scripts" / "results_docs.py")
results_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results_docs)

TEMPLATES = results_docs.templates(RESULTS)


def test_some_documents_are_made_from_their_runs():
    assert TEMPLATES, "no docs/results/*.template.md"
    for template in TEMPLATES:
        assert results_docs.run_declaration_problems(template) == []
    for run in results_docs.kept_runs(RESULTS):
        assert {p.name for p in run.iterdir()} >= {"results.json", "resolved.yaml", "experiment.yaml", "nested.yaml"}, (
            run
        )


def test_a_kept_run_that_no_document_declares_has_no_changed_default():
    assert results_docs.undeclared_run_changes(RESULTS) == []


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_document_is_its_template_and_run(template):
    doc = results_docs.doc_of(template)
    assert doc.read_text(encoding="utf-8") == results_docs.render(template), (
        f"{doc.name} differs from what {template.name} and {template.name[: -len('.template.md')]}.run make: "
        "edit the template, not the document, and run `python scripts/results_docs.py`"
    )


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_every_number_of_the_prose_is_a_result(template):
    assert results_docs.unmatched_numbers(template) == []


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_a_changed_default_is_rerun_or_bannered(template):
    assert results_docs.unbannered_changes(template) == []


def test_every_other_document_says_its_tables_are_not_regenerable():
    made = {results_docs.doc_of(t) for t in TEMPLATES} | {template for _, template, _ in results_docs.SECTIONS}
    unmarked = [
        doc.name
        for doc in sorted(RESULTS.glob("*.md"))
        if doc not in made
        and not doc.name.endswith(".template.md")
        and results_docs.NOT_REGENERABLE not in doc.read_text(encoding="utf-8")
    ]
    assert unmarked == [], f"neither made from a kept run nor marked '{results_docs.NOT_REGENERABLE}'"


@pytest.mark.parametrize("section", results_docs.SECTIONS, ids=lambda s: f"{s[0].name}:{s[1].name}")
def test_a_section_of_another_document_is_its_template_and_run(section):
    """README's demo results are made from the kept demo run like the documents here (issue 37)."""
    assert results_docs.section_problems(*section) == []


def test_an_edited_section_or_an_unrecorded_number_in_it_is_caught(tmp_path):
    document, template, run = results_docs.SECTIONS[0]
    copy, text = tmp_path / document.name, document.read_text(encoding="utf-8")
    start = text.index(results_docs.SECTION_START.format(template=template.name))
    edited = text[:start] + text[start:].replace("| 65.02 |", "| 65.20 |", 1).replace("** [50.73", "** [50.37", 1)
    copy.write_text(edited, encoding="utf-8")
    assert any("section is not what" in p for p in results_docs.section_problems(copy, template, run))
    copy.write_text(text.replace(text[start:], ""), encoding="utf-8")
    assert "has no section" in results_docs.section_problems(copy, template, run)[0]
    wrong = tmp_path / template.name
    wrong.write_text(template.read_text(encoding="utf-8").replace("74.39 against", "74.93 against"), encoding="utf-8")
    assert any(p.endswith(": 74.93") for p in results_docs.unmatched_numbers(wrong, run))


# -- the checks catch what they are for (a small run of the real shape, in a temporary docs folder) ----------


@pytest.fixture
def tiny_doc(tmp_path):
    """privacy-beyond-eer-real's kept run with a two-line template: a report line and one quoted number."""
    template = next(t for t in TEMPLATES if t.name.startswith("privacy-beyond-eer-real"))
    run = tmp_path / "tiny.run"
    shutil.copytree(results_docs.run_of(template), run)
    text = (
        "# tiny\n\nGE2E's pooled O-A EER is 35.7 % on [[24]] speakers.\n\n"
        "<!-- vpeval report --format md --metric privacy-gate -->\n"
    )
    (tmp_path / "tiny.template.md").write_text(text, encoding="utf-8")
    return tmp_path / "tiny.template.md"


def test_regenerated_table_is_vpeval_reports_and_an_edit_is_caught(tiny_doc):
    doc = results_docs.doc_of(tiny_doc)
    doc.write_text(results_docs.render(tiny_doc), encoding="utf-8")
    text = doc.read_text(encoding="utf-8")
    assert "| ge2e | 1.67 |" in text.replace("B2 | ", "") and "on 24 speakers" in text and "[[" not in text
    doc.write_text(text.replace("| 14.17 |", "| 14.71 |"), encoding="utf-8")
    assert any("is not what" in p for p in results_docs.problems(tiny_doc))


def test_a_number_not_in_the_results_is_caught_unless_marked(tiny_doc):
    assert results_docs.unmatched_numbers(tiny_doc) == []
    tiny_doc.write_text(tiny_doc.read_text().replace("35.7 %", "36.1 %"), encoding="utf-8")
    assert results_docs.unmatched_numbers(tiny_doc) == ["tiny.template.md:3: 36.1"]
    tiny_doc.write_text(tiny_doc.read_text().replace("36.1 %", "[[36.1]] %"), encoding="utf-8")
    assert results_docs.unmatched_numbers(tiny_doc) == []


def test_training_losses_and_finding_sides_are_results_too(tiny_doc):
    """A training epoch's loss (report.md's training curves) and a finding's compared sides are results the
    prose may quote; an epoch number is not one of them."""
    results = json.loads((results_docs.run_of(tiny_doc) / "results.json").read_text())
    loss = next(e["loss"] for t in results["training"] for e in t["epochs"])
    values = results_docs.result_values(results)
    assert results_docs.matches(f"{loss:.3f}", values)
    without = {**results, "training": [], "findings": []}
    assert not results_docs.matches(f"{loss:.6f}", results_docs.result_values(without))


def test_a_default_changed_after_the_run_fails_until_bannered(tiny_doc):
    run = results_docs.run_of(tiny_doc)
    resolved = yaml.safe_load((run / "resolved.yaml").read_text())
    assert "win_ms" not in json.dumps(yaml.safe_load((run / "experiment.yaml").read_text()))
    resolved["anonymizers"][0]["chain"][0]["params"]["win_ms"] = 25.0  # as if mcadams' default had been 25 then
    (run / "resolved.yaml").write_text(yaml.safe_dump(resolved), encoding="utf-8")
    found = results_docs.unbannered_changes(tiny_doc)
    assert any("(mcadams) `win_ms` was 25.0 in the run, resolves to 20.0 now" in p for p in found)
    banner = "> **Banner of 2026-12-05:** mcadams' `win_ms` default is 20 ms now; this run used 25.\n\n"
    tiny_doc.write_text(banner + tiny_doc.read_text(), encoding="utf-8")
    assert not any("win_ms" in p for p in results_docs.unbannered_changes(tiny_doc))


def test_a_parameter_the_experiment_sets_is_not_a_default(tiny_doc):
    run = results_docs.run_of(tiny_doc)
    resolved = yaml.safe_load((run / "resolved.yaml").read_text())
    resolved["metrics"][-1]["params"]["max_original_eer"] = 12.0  # set by the file (10): not compared
    (run / "resolved.yaml").write_text(yaml.safe_dump(resolved), encoding="utf-8")
    assert not any("max_original_eer" in p for p in results_docs.unbannered_changes(tiny_doc))


def test_a_parameter_the_plugin_no_longer_takes_is_a_change(tiny_doc):
    run = results_docs.run_of(tiny_doc)
    text = (run / "experiment.yaml").read_text().replace("max_original_eer: 10", "max_original_eer: 10, gone: 1")
    (run / "experiment.yaml").write_text(text, encoding="utf-8")
    assert any(
        "(privacy-gate) `(the plugin)`" in p and "fails now" in p for p in results_docs.unbannered_changes(tiny_doc)
    )


def nested_changes(template) -> set[str]:
    """The check's findings about nested plugins, as a set: compared before and after an edit, since the tiny
    template has none of the real one's banners for changes made since its run."""
    return {p for p in results_docs.unbannered_changes(template) if "(attacker " in p or "nested" in p}


def test_a_nested_plugins_default_changed_after_the_run_fails_until_bannered(tiny_doc):
    """embedding-view names ecapa with some params: ecapa's other params are defaults that resolved.yaml does not
    record; nested.yaml does, and a change of one of them is a change like a top-level one."""
    run = results_docs.run_of(tiny_doc)
    before = nested_changes(tiny_doc)
    assert not any("`margin`" in p for p in before)
    recorded = yaml.safe_load((run / "nested.yaml").read_text())
    ecapa = next(e for e in recorded if e["where"] == "attackers[1]" and e["use"] == "ecapa")
    assert "margin" not in ecapa["given"] and ecapa["params"]["margin"] == 0.2
    ecapa["params"]["margin"] = 0.3  # as if ecapa's default margin had been 0.3 when the run was kept
    (run / "nested.yaml").write_text(yaml.safe_dump(recorded), encoding="utf-8")
    assert nested_changes(tiny_doc) - before == {
        "tiny.template.md: attackers[1] (attacker ecapa) `margin` was 0.3 in the run, resolves to 0.2 now; "
        "rerun the experiment or name `margin` in a dated banner"
    }
    banner = "> **Banner of 2026-12-05:** ecapa's `margin` default is 0.2 now; this run's nested ecapa used 0.3.\n\n"
    tiny_doc.write_text(banner + tiny_doc.read_text(), encoding="utf-8")
    assert nested_changes(tiny_doc) == before


def test_a_nested_parameter_given_in_the_file_is_not_a_default(tiny_doc):
    run = results_docs.run_of(tiny_doc)
    before = nested_changes(tiny_doc)
    recorded = yaml.safe_load((run / "nested.yaml").read_text())
    ecapa = next(e for e in recorded if e["where"] == "attackers[1]" and e["use"] == "ecapa")
    ecapa["params"]["epochs"] = 99  # set by the file (8): not compared
    (run / "nested.yaml").write_text(yaml.safe_dump(recorded), encoding="utf-8")
    assert nested_changes(tiny_doc) == before


def test_a_nested_plugin_named_otherwise_or_a_missing_record_is_a_change(tiny_doc):
    run = results_docs.run_of(tiny_doc)
    recorded = yaml.safe_load((run / "nested.yaml").read_text())
    recorded[0]["use"] = "ecapa"  # the run's embedding-view viewed another plugin than the file names now
    (run / "nested.yaml").write_text(yaml.safe_dump(recorded), encoding="utf-8")
    assert any("(nested plugin) `(the plugin)`" in p for p in results_docs.unbannered_changes(tiny_doc))
    (run / "nested.yaml").unlink()
    assert any("--record-nested" in p for p in results_docs.unbannered_changes(tiny_doc))


# -- documents that draw on several kept runs (a run without a template, a notes page) ----------------------


@pytest.fixture
def two_runs(tmp_path):
    """A temporary docs folder with two kept runs and no template: privacy-beyond-eer-real's run as `pbe` and the
    demo's as `demo` (65.02 is one of demo's results and none of pbe's; 35.7 the reverse)."""
    for name, source in (("pbe", "privacy-beyond-eer-real"), ("demo", "demo")):
        shutil.copytree(RESULTS / f"{source}.run", tmp_path / f"{name}.run")
    return tmp_path


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_a_report_line_renders_the_declared_run_it_names(two_runs):
    """`<!-- vpeval report @NAME ARGS -->` prints NAME.run's table, the plain line the document's own run's."""
    args = "--format md --metric eer"
    template = write(
        two_runs / "pbe.template.md",
        f"# pbe\n\n<!-- runs: demo -->\n\n<!-- vpeval report {args} -->\n\n<!-- vpeval report @demo {args} -->\n",
    )
    own, other = (results_docs.vpeval_report(two_runs / f"{n}.run", args) for n in ("pbe", "demo"))
    assert own != other
    text = results_docs.render(template)
    assert text.index(own) < text.index(other)
    assert "<!-- vpeval report @demo --format md --metric eer -->\n\n" + other in text


def test_a_report_line_naming_an_undeclared_or_missing_run_is_refused(two_runs):
    template = write(two_runs / "pbe.template.md", "# pbe\n\n<!-- vpeval report @demo --format md -->\n")
    assert results_docs.problems(template) == [
        "pbe.template.md:3: `@demo` is not a run the template declares: add it to a `<!-- runs: ... -->` line"
    ]
    with pytest.raises(SystemExit, match="not a run the template declares"):
        results_docs.render(template)
    write(template, "# pbe\n\n<!-- runs: demo gone -->\n")
    assert results_docs.problems(template) == [
        f"pbe.template.md declares the run gone, but {two_runs.name}/gone.run is not there: keep the run there or "
        "remove it from the `<!-- runs: ... -->` line"
    ]


def test_a_notes_page_without_a_run_of_its_own_checks_its_numbers_against_the_declared_runs(two_runs):
    notes = write(
        two_runs / "notes.template.md",
        "# notes\n\n<!-- runs: pbe demo -->\n\nGE2E's pooled O-A EER is 35.7 %; the demo's 65.02.\n\n"
        "<!-- vpeval report @pbe --format md --metric privacy-gate -->\n",
    )
    results_docs.doc_of(notes).write_text(results_docs.render(notes), encoding="utf-8")
    assert results_docs.unmatched_numbers(notes) == []
    assert not [p for p in results_docs.problems(notes) if "is not what" in p or ".template.md:" in p]
    write(notes, notes.read_text().replace("65.02", "65.20"))
    assert results_docs.unmatched_numbers(notes) == ["notes.template.md:5: 65.20"]
    write(notes, "# notes\n\nNo run: 65.02.\n")
    assert results_docs.problems(notes)[0].startswith("notes.template.md has no run: keep one in notes.run")


def test_a_documents_numbers_may_come_from_its_own_run_or_a_declared_one(two_runs):
    text = "# pbe\n\n<!-- runs: demo -->\n\nGE2E's pooled O-A EER is 35.7 %; the demo's 65.02.\n"
    template = write(two_runs / "pbe.template.md", text)
    assert results_docs.unmatched_numbers(template) == []
    write(template, text.replace("<!-- runs: demo -->", ""))
    assert results_docs.unmatched_numbers(template) == ["pbe.template.md:5: 65.02"]


def with_changed_default(run):
    """As if mcadams' win_ms default had been 25 when the run was kept (it is 20 now, and the file sets none)."""
    resolved = yaml.safe_load((run / "resolved.yaml").read_text())
    resolved["anonymizers"][0]["chain"][0]["params"]["win_ms"] = 25.0
    (run / "resolved.yaml").write_text(yaml.safe_dump(resolved), encoding="utf-8")


def win_ms(found):
    return [p for p in found if "`win_ms`" in p]


def test_a_run_without_a_template_is_checked_against_the_banners_of_every_template_declaring_it(two_runs):
    with_changed_default(two_runs / "pbe.run")
    one = write(two_runs / "one.template.md", "# one\n\n<!-- runs: pbe -->\n")
    other = write(two_runs / "other.template.md", "# other\n\n<!-- runs: demo pbe -->\n")
    assert win_ms(results_docs.unbannered_changes(one)) == [
        "one.template.md (declared run pbe.run): anonymizers[0].chain[0] (mcadams) `win_ms` was 25.0 in the run, "
        "resolves to 20.0 now; rerun the experiment or name `win_ms` in a dated banner"
    ]
    banner = "> **Banner of 2026-12-05:** pbe's mcadams used `win_ms` 25; the default is 20 now.\n\n"
    write(one, banner + one.read_text())
    assert win_ms(results_docs.unbannered_changes(one)) == []
    found, checked = results_docs.check(two_runs)
    assert checked == 2 and [p.split(":")[0] for p in win_ms(found)] == ["other.template.md (declared run pbe.run)"]
    write(other, banner + other.read_text())
    assert win_ms(results_docs.check(two_runs)[0]) == []


def test_a_run_with_a_template_of_its_own_is_checked_against_that_template_only(two_runs):
    with_changed_default(two_runs / "pbe.run")
    write(two_runs / "notes.template.md", "# notes\n\n<!-- runs: pbe -->\n")
    own = write(two_runs / "pbe.template.md", "# pbe\n")
    assert [p.split(":")[0] for p in win_ms(results_docs.check(two_runs)[0])] == ["pbe.template.md"]
    write(own, "> **Banner of 2026-12-05:** mcadams' `win_ms` default is 20 now; this run used 25.\n\n# pbe\n")
    assert win_ms(results_docs.check(two_runs)[0]) == []


def test_a_run_that_no_template_declares_is_checked_too(two_runs):
    """Its changed default cannot be bannered anywhere: the run is redone (or a document declares it)."""
    with_changed_default(two_runs / "pbe.run")
    assert win_ms(results_docs.check(two_runs)[0]) == [
        "pbe.run (no template declares it): anonymizers[0].chain[0] (mcadams) `win_ms` was 25.0 in the run, "
        "resolves to 20.0 now; rerun the experiment or name `win_ms` in a dated banner"
    ]
    assert results_docs.check(two_runs, ["pbe"])[0] == []  # a chosen document only: its own runs
