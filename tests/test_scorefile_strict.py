"""Score files are read strictly: nothing is re-aligned, re-read or counted twice in silence.

Each case was accepted before (issue 12, finding 5): a line with a fifth column next to one missing its
enroll id shifted every token in between, `1_000` read as 1000, a repeated trial counted twice, and
scores near 1e308 gave a linkability of 0.
"""

import numpy as np
import pytest
from click.testing import CliRunner

from vpeval.cli import main
from vpeval.errors import ConfigError, DataError
from vpeval.metrics_cli import run_metrics_on_scores
from vpeval.scorefile import read_score_file, write_score_file
from vpeval.types import Scores

GOOD = ["spkA uttA1 2.5 target", "spkA uttB1 -1.0 nontarget", "spkB uttB1 1.5 target", "spkB uttA1 0.25 nontarget"]


def _file(tmp_path, lines, name="scores.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _refused(path, fragment):
    with pytest.raises(DataError) as err:
        read_score_file(path)
    message = str(err.value)
    assert fragment in message and "\n" not in message, message
    return message


def test_a_fifth_column_next_to_a_missing_enroll_id_is_not_realigned(tmp_path):
    # The token counts add up (4 + 5 + 3 + 4 = 4 lines x 4), so only a per-line check sees it.
    path = _file(tmp_path, [GOOD[0], GOOD[1] + " m", "uttB1 1.5 target", GOOD[3]])
    message = _refused(path, f"{path}:2: it has 5 columns where earlier lines have 4")
    assert "expected 'enroll test score target|nontarget [f|m]'" in message


def test_a_line_missing_its_enroll_id_names_the_line(tmp_path):
    path = _file(tmp_path, [g + " f" for g in GOOD[:2]] + ["uttB1 1.5 target f", GOOD[3] + " m"])
    _refused(path, f"{path}:3: it has 4 columns where earlier lines have 5")


def test_a_first_line_that_differs_from_the_rest_is_the_one_named(tmp_path):
    path = _file(tmp_path, ["uttA1 2.5 target f"] + [g + " f" for g in GOOD[1:]])
    _refused(path, f"{path}:1: it has 4 columns where most lines have 5")


@pytest.mark.parametrize("score", ["1_000", "1_0.5", "\u0661\u0662"])
def test_scores_python_would_read_but_are_no_plain_numbers_are_refused(tmp_path, score):
    path = _file(tmp_path, GOOD[:2] + [f"spkB uttB1 {score} target", GOOD[3]])
    _refused(path, f"{path}:3: the score '{score}' is not a plain decimal number")


def test_plain_number_forms_are_read(tmp_path):
    path = _file(tmp_path, ["a x +1.5e3 target", "a y -.5 nontarget", "b y 7. target", "b x 1E-2 nontarget"])
    assert read_score_file(path).scores.tolist() == [1500.0, -0.5, 7.0, 0.01]


def test_a_repeated_trial_is_refused_with_both_lines(tmp_path):
    path = _file(tmp_path, GOOD + ["", "spkA uttB1 -0.5 nontarget"])
    _refused(path, f"{path}:6: the trial 'spkA uttB1' repeats line 2")


def test_the_same_test_utterance_against_two_enrollments_is_two_trials(tmp_path):
    assert len(read_score_file(_file(tmp_path, GOOD))) == 4  # uttB1 against spkA and spkB


def _separable_scores(n=400, seed=3):
    rng = np.random.default_rng(seed)
    targets = rng.random(n) < 0.3
    scores = rng.normal(size=n) + 2.5 * targets
    spk = np.array([f"spk{k}" for k in rng.integers(0, 20, n)])
    return Scores(scores, targets, None, spk, None, spk, np.array([f"utt{i}" for i in range(n)], dtype=object))


def _linkability(tmp_path, scores, name):
    path = tmp_path / name
    write_score_file(path, scores)
    rows = [
        r
        for r in __import__("json").loads(run_metrics_on_scores(str(path), ["linkability"], True))
        if r["gender"] == "all"
    ]
    return rows[0]["value"]


@pytest.mark.parametrize("factor", [1e300, 1e-300, 2.0**1000])
def test_linkability_does_not_depend_on_the_scale_of_the_scores(tmp_path, factor):
    base = _separable_scores()
    scaled = Scores(
        base.scores * factor, base.targets, None, base.enroll_speakers, None, base.enroll_ids, base.test_ids
    )
    assert np.isfinite(scaled.scores).all()
    plain = _linkability(tmp_path, base, "plain.txt")
    assert 0.3 < plain < 1.0
    assert _linkability(tmp_path, scaled, "scaled.txt") == pytest.approx(plain, abs=1e-9)


def test_scores_at_the_edge_of_the_float_range_give_the_same_linkability(tmp_path):
    # max - min overflows to inf here; before, the bins broke and linkability came out 0.
    base = _separable_scores()
    extreme = base.scores / np.abs(base.scores).max() * 1.7e308
    edge = Scores(extreme, base.targets, None, base.enroll_speakers, None, base.enroll_ids, base.test_ids)
    assert _linkability(tmp_path, edge, "edge.txt") == pytest.approx(
        _linkability(tmp_path, base, "plain.txt"), abs=1e-9
    )


@pytest.mark.parametrize("bootstrap", [-5, -1])
def test_a_negative_bootstrap_is_one_sentence(tmp_path, bootstrap):
    path = _file(tmp_path, GOOD)
    with pytest.raises(ConfigError, match=rf"--bootstrap is {bootstrap}; give 0"):
        run_metrics_on_scores(str(path), None, False, bootstrap)
    result = CliRunner().invoke(main, ["metrics", "--scores", str(path), "--bootstrap", str(bootstrap)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--bootstrap" in result.output and len(result.output.strip().splitlines()) == 1, result.output


def test_a_bootstrap_beyond_a_metrics_bound_is_one_sentence(tmp_path):
    path = _file(tmp_path, GOOD)
    with pytest.raises(ConfigError, match=r"refuses --bootstrap 1000000000: input should be less than or equal to"):
        run_metrics_on_scores(str(path), ["eer-step"], False, 10**9)
