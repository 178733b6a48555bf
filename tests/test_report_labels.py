"""Labels that say what a number is (issue 37, item 4): a pretrained attacker is labelled pretrained, with what
its weights learned from when the plugin says it, never "trained on original"; training curves are in %."""

from vpeval.config import load_experiment_text
from vpeval.report.provenance import RunInfo
from vpeval.report.tables import attack_tables
from vpeval.report.writer import pretrained_attackers


def eer_row(attacker, scenario="original"):
    return {"metric": "eer", "metric_plugin": "eer", "anonymizer": "mcadams", "attacker": attacker,
            "scenario": scenario, "protocol": "O-A", "n": 1, "gender": "all", "value": 30.0, "unit": "%",
            "details": {}}  # fmt: skip


def test_the_attack_table_says_pretrained_not_the_scenario():
    (table,) = attack_tables([eer_row("ge2e"), eer_row("ecapa")], pretrained={"ge2e"})
    assert "| mcadams | ge2e | pretrained | 30.00 |" in table and "| mcadams | ecapa | original | 30.00 |" in table


def test_the_caption_says_what_a_pretrained_attacker_learned_from():
    resolved = {
        "attackers": [
            {"label": "ge2e", "use": "ge2e", "train_on": "original"},
            {"label": "sb", "use": "speechbrain", "train_on": "original"},
            {"label": "ecapa", "use": "ecapa", "train_on": "original"},
        ]
    }
    info = RunInfo.from_run(resolved, {"pretrained": {"ge2e": "VoxCeleb 1+2", "sb": ""}})
    assert info.attackers["ge2e"] == "`ge2e`, pretrained: VoxCeleb 1+2"
    assert info.attackers["sb"] == "`speechbrain`, pretrained, not trained here"
    assert info.attackers["ecapa"] == "`ecapa`, lazy-informed: trained on original speech"


def test_the_run_records_which_attackers_are_pretrained(fake_plugins):
    exp = load_experiment_text(
        "name: labels\ndata: {corpus: {use: fake-corpus}}\nanonymizers: [fake-shift]\n"
        "attackers: [ge2e, fake-spectrum]\nmetrics: [fake-eer]\n",
        "labels.yaml",
    )
    (label, on), *others = pretrained_attackers(exp).items()
    assert label == "ge2e" and "resemblyzer 0.1.4" in on and others == []


def test_vpeval_report_on_run_folders_keeps_the_labels_and_the_drops(tmp_path):
    import json

    from vpeval.report.writer import combined_report

    results = {"experiment": "demo", "rows": [eer_row("ge2e")], "pretrained": {"ge2e": ""},
               "drops_and_doubts": ["Metric wer (mcadams): 20 utterances skipped (no transcript)."]}  # fmt: skip
    (tmp_path / "results.json").write_text(json.dumps(results))
    (tmp_path / "resolved.yaml").write_text("attackers: [{label: ge2e, use: ge2e, train_on: original}]\n")
    text = combined_report([tmp_path])
    assert "- demo: Metric wer (mcadams): 20 utterances skipped (no transcript)." in text
    assert "| demo | mcadams | ge2e | pretrained | 30.00 |" in text
