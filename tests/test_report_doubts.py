"""Every drop and doubt counted (issue 37, item 2): skipped utterances per metric and reason, speakers without a
gender label and the group they form, the non-target trials behind each low-false-positive figure with a
warning below the rule of 30, and one line when nothing was dropped."""

from vpeval.data.plan import PlanSettings, make_plan
from vpeval.report.doubts import NOTHING, drops_and_doubts
from vpeval.types import Corpus, Utterance


def row(metric, value, gender="all", anonymizer="mcadams", **details):
    return {"metric": metric, "metric_plugin": metric, "value": value, "gender": gender, "anonymizer": anonymizer,
            "attacker": "", "protocol": "", "n": None, "details": details}  # fmt: skip


def test_a_run_with_nothing_dropped_says_so_in_one_line():
    assert drops_and_doubts({"rows": [row("eer", 10.0)], "plan_notes": [], "skipped_audio": []}) == [NOTHING]


def test_wer_skips_are_counted_once_per_speech_and_reason():
    common = {"speech": "mcadams", "skipped_no_transcript": 20, "skipped_empty_reference": 0}
    rows = [row("wer", 30.0, g, **common) for g in ("all", "f", "m")]
    rows.append(row("wer", 10.0, anonymizer="original", speech="original", skipped_no_transcript=20))
    lines = drops_and_doubts({"rows": rows})
    assert lines == [
        "Metric wer (mcadams): 20 utterances skipped (no transcript).",
        "Metric wer (original): 20 utterances skipped (no transcript).",
    ]


def test_skipped_audio_and_plan_notes_are_drops():
    payload = {
        "skipped_audio": [
            {"utterance": "u1", "path": "a.wav", "reason": "silent"},
            {"utterance": "u2", "path": "b.wav", "reason": "silent"},
            {"utterance": "u3", "path": "c.wav", "reason": "unreadable"},
        ],
        "plan_notes": ["speaker s9 has one utterance, too few to enroll and test; left out of evaluation"],
    }
    lines = drops_and_doubts(payload)
    assert (
        lines[0] == "Data: 3 audio files skipped as unusable (on_bad_audio: skip): 2 silent; 1 unreadable (u1, u2, u3)."
    )
    assert lines[1].startswith("Data plan: speaker s9 has one utterance") and NOTHING not in lines


def test_low_false_positive_figures_carry_their_trial_counts_and_a_warning_below_the_rule_of_30():
    rows = [
        row("min-dcf", 0.9, g, p_target=0.001, non_targets=n, targets=200)
        for g, n in (("f", 95.0), ("m", 105.0), ("all", 200.0))
    ]
    rows += [row("min-dcf", 0.5, "avg", p_target=0.001)]  # the f/m average: its f and m rows carry the counts
    rows += [row("tpr-at-fpr", 40.0, "all", fpr=0.01, non_targets=5000.0)]
    rows += [row("min-dcf", 0.5, "all", p_target=0.01)]  # written before min-dcf recorded its trials
    lines = drops_and_doubts({"rows": rows})
    assert lines[0] == NOTHING
    assert lines[1].startswith(
        "**Warning**: min-dcf at p_target 0.001 rests on 95 to 200 non-target trials per figure (f, m and pooled), "
        "fewer than the 30,000 the rule of 30 asks (30 false alarms at a false-positive rate p: 30/p non-targets)"
    )
    assert lines[2].startswith("tpr-at-fpr at fpr 0.01: 5,000 non-target trials per figure, at least the 3,000")
    assert lines[3] == "min-dcf at p_target 0.01: its non-target trials were not recorded."


def corpus(unlabelled: int) -> Corpus:
    genders = ["f", "m", "f", "m"] + [None] * unlabelled
    return Corpus(
        "c",
        [
            Utterance(id=f"s{s}-{u}", speaker=f"s{s}", path=f"/a/{s}-{u}.wav", gender=g)
            for s, g in enumerate(genders)
            for u in range(6)
        ],
    )


def test_speakers_without_a_gender_label_are_named_with_the_group_they_form():
    notes = make_plan(corpus(2), PlanSettings(attacker_train_speakers=0, enroll_utterances=[1])).notes
    (note,) = [n for n in notes if "no gender label" in n]
    assert note.startswith("2 evaluation speaker(s) have no gender label (s4, s5) and form a group of their own")
    assert "their non-target trials come from the other one alone" in note
    assert not any("no gender label" in n for n in make_plan(corpus(0), PlanSettings(attacker_train_speakers=0)).notes)


SMALL = """\
name: doubts
seed: 3
data:
  corpus: {use: fake-corpus, params: {speakers: 8, utterances: 4}}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [fake-shift]
attackers: [fake-spectrum]
metrics: [fake-eer]
"""


def test_the_run_puts_them_at_the_top_of_the_report_and_on_the_console(tmp_path, fake_plugins, monkeypatch):
    from click.testing import CliRunner

    from vpeval.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.yaml").write_text(SMALL)
    args = ["--experiment", "exp.yaml", "--cache", str(tmp_path / "cache"), "-q", "--output", str(tmp_path / "run")]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == NOTHING
    report = (tmp_path / "run" / "report.md").read_text()
    assert report.index("## Drops and doubts") < report.index("\n| ")  # before any table
    assert f"## Drops and doubts\n\n- {NOTHING}\n" in report


def test_trials_without_a_gender_label_are_counted_against_the_f_m_average():
    payload = {"unlabelled_trials": {"1": [40, 400], "3": [0, 400], "5": [400, 400]}}
    assert drops_and_doubts(payload) == [
        "Trials at N = 1: 40 of 400 have no gender label; they count in the pooled figures but in no f or m figure, "
        "so not in the f/m average shown first."
    ]  # none unlabelled, or all (no f/m figures at all): nothing to say
