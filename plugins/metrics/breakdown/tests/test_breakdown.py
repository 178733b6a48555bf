"""Breakdowns by attribute against independent computations: the core's EER (vpeval.stats.eer) on the
group's trials picked with loops, and identification ranks counted by hand on the group's probes."""

from pathlib import Path

import numpy as np
import pytest

from vpeval.api import MetricInputs, SimilarityMatrix
from vpeval.errors import ConfigError, DataError
from vpeval.plugins import plugin_context
from vpeval.stats import eer
from vpeval.testing.contracts import MetricContract, random_scores
from vpeval.types import Scores
from vpeval_breakdown.attributes import band_label, read_kaldi_folder, read_manifest_columns
from vpeval_breakdown.by_attribute import ByAttribute, ByAttributeSimilarity

AGE_EDGES = [18, 30, 50]


def _speakers(rng, n=24):
    speakers = [f"s{k:02d}" for k in range(n)]
    ages = {s: int(rng.integers(8, 70)) for s in speakers}
    accents = {s: ["scottish", "irish", "welsh"][k % 3] for k, s in enumerate(speakers)}
    return speakers, ages, accents


def _scores(rng, speakers, per=30):
    enroll = np.repeat(speakers, per)
    same = rng.random(len(enroll)) < 0.3
    test = np.where(same, enroll, rng.choice(speakers, size=len(enroll)))
    targets = enroll == test
    # the separation depends on the speaker, so groups differ
    strength = {s: 0.5 + 3.0 * (k % 4) / 3 for k, s in enumerate(speakers)}
    scores = rng.normal(size=len(enroll)) + targets * np.array([strength[s] for s in enroll])
    return Scores(scores, targets, None, enroll, test)


def _write_kaldi(folder, ages, accents):
    folder.mkdir()
    (folder / "spk2age").write_text("".join(f"{s} {a}\n" for s, a in ages.items()))
    (folder / "spk2accent").write_text("".join(f"{s} {a}\n" for s, a in accents.items()))
    (folder / "spk2utt").write_text("s00 u1 u2\n")  # not an attribute


def _metric(cls, tmp_path, **params):
    return cls(cls.Params(**params), plugin_context(seed=0, work_dir=tmp_path))


def test_kaldi_folder_gives_every_spk2_file_but_spk2utt(tmp_path):
    _, ages, accents = _speakers(np.random.default_rng(0))
    _write_kaldi(tmp_path / "data", ages, accents)
    found = read_kaldi_folder(tmp_path / "data")
    assert set(found) == {"age", "accent"}
    assert found["age"] == {s: str(a) for s, a in ages.items()}


def test_bands_are_half_open_with_open_ends():
    assert [band_label(x, AGE_EDGES) for x in (5, 18, 29.9, 30, 50, 80)] == [
        "<18",
        "18-30",
        "18-30",
        "30-50",
        ">=50",
        ">=50",
    ]


def test_a_speaker_with_two_values_in_a_manifest_is_refused(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("path,speaker,age\na.wav,s1,30\nb.wav,s1,31\n")
    with pytest.raises(DataError, match="line 3 gives speaker s1 age '31'"):
        read_manifest_columns(path, ["age"])


def test_a_manifest_without_the_column_names_what_it_has(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("path,speaker,age\na.wav,s1,30\n")
    with pytest.raises(DataError, match="no column 'accent'.*path, speaker, age"):
        read_manifest_columns(path, ["accent"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eer_per_group_matches_an_independent_computation(tmp_path, seed):
    rng = np.random.default_rng(seed)
    speakers, ages, accents = _speakers(rng)
    _write_kaldi(tmp_path / "data", ages, accents)
    scores = _scores(rng, speakers)
    metric = _metric(
        ByAttribute,
        tmp_path,
        attributes=["age", "accent"],
        kaldi=str(tmp_path / "data"),
        bands={"age": AGE_EDGES},
        min_speakers=3,
        metric_params={"bootstrap": 0},
    )
    rows = {r.gender: r for r in metric.compute(MetricInputs(scores=scores))}
    labels = {"age": {s: band_label(a, AGE_EDGES) for s, a in ages.items()}, "accent": accents}
    checked = 0
    for attribute, of in labels.items():
        for group in set(of.values()):
            picked = [
                i
                for i in range(len(scores))
                if of[scores.enroll_speakers[i]] == group and of[scores.test_speakers[i]] == group
            ]
            members = {scores.enroll_speakers[i] for i in picked}
            row = rows[f"{attribute}={group}"]
            assert row.details["speakers"] == len(members)
            if len(members) < 3:
                assert np.isnan(row.value) and "too few" in row.details["reason"]
                continue
            expected = 100 * eer(scores.scores[picked], scores.targets[picked])
            assert row.value == pytest.approx(expected)
            checked += 1
    assert checked >= 3


def test_a_small_group_says_so_instead_of_a_figure(tmp_path):
    rng = np.random.default_rng(5)
    speakers, ages, accents = _speakers(rng, n=12)
    ages = {s: (10 if k < 2 else 40) for k, s in enumerate(speakers)}  # two children only
    _write_kaldi(tmp_path / "data", ages, accents)
    metric = _metric(
        ByAttribute,
        tmp_path,
        attributes=["age"],
        kaldi=str(tmp_path / "data"),
        bands={"age": AGE_EDGES},
        metric_params={"bootstrap": 50},
    )
    rows = {r.gender: r for r in metric.compute(MetricInputs(scores=_scores(rng, speakers)))}
    assert np.isnan(rows["age=<18"].value) and rows["age=<18"].ci_low is None
    assert "2 speaker(s), fewer than min_speakers 5" in rows["age=<18"].details["reason"]
    adults = rows["age=30-50"]
    assert np.isfinite(adults.value) and adults.ci_low <= adults.value <= adults.ci_high
    assert adults.details["speakers"] == 10


def test_gender_comes_from_the_scores_without_a_file(tmp_path):
    s = random_scores()
    rows = _metric(ByAttribute, tmp_path, metric_params={"bootstrap": 0}).compute(MetricInputs(scores=s))
    assert sorted(r.gender for r in rows) == ["gender=f", "gender=m"]
    female = [i for i in range(len(s)) if s.genders[i] == "f"]
    assert rows[0].value == pytest.approx(100 * eer(s.scores[female], s.targets[female]))


def test_an_attribute_no_source_gives_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no source gives the attribute 'accent'"):
        _metric(ByAttribute, tmp_path, attributes=["accent"]).compute(MetricInputs(scores=random_scores()))


def _similarity(rng, speakers, enroll=2, test=3):
    rows = np.repeat(speakers, enroll)
    cols = np.repeat(speakers, test)
    scores = rng.normal(size=(len(rows), len(cols))) + 1.0 * (rows[:, None] == cols[None, :])
    return SimilarityMatrix(scores, rows, cols)


def test_identification_per_group_ranks_the_groups_probes_against_everyone(tmp_path):
    rng = np.random.default_rng(3)
    speakers, ages, accents = _speakers(rng, n=15)
    _write_kaldi(tmp_path / "data", ages, accents)
    matrices = {p: _similarity(rng, speakers) for p in ("O-O", "O-A", "A-A")}
    metric = _metric(
        ByAttributeSimilarity,
        tmp_path,
        attributes=["accent"],
        kaldi=str(tmp_path / "data"),
        min_speakers=2,
        metric_params={"bootstrap": 0, "estimate": "empirical"},
    )
    rows = metric.compute(MetricInputs(similarity=matrices))
    for r in rows:
        if r.metric != "top-1":
            continue
        group = r.details["group"]
        m = matrices[r.details["protocol"]]
        hits = total = 0
        for c, spk in enumerate(m.col_speakers):
            if accents[spk] != group:
                continue
            means = {s: m.scores[m.row_speakers == s, c].mean() for s in speakers}
            total += 1
            hits += all(means[spk] > v for s, v in means.items() if s != spk)
        assert r.value == pytest.approx(100 * hits / total)
        assert r.details["population"] == len(speakers) and r.details["speakers"] == 5


class TestByAttributeContract(MetricContract):
    plugin_name = "by-attribute"
    params = {"metric_params": {"bootstrap": 20}}


class TestByAttributeSimilarityContract(MetricContract):
    plugin_name = "by-attribute-similarity"
    params = {
        "metric_params": {"bootstrap": 0},
        "files": {"gender": str(Path(__file__).parent / "data" / "spk2gender")},
        "min_speakers": 2,
    }

    def inputs(self):
        rng, speakers = np.random.default_rng(0), [f"s{k}" for k in range(6)]
        return MetricInputs(similarity={p: _similarity(rng, speakers) for p in ("O-O", "O-A", "A-A")})


def test_validate_names_a_missing_attribute_source(tmp_path):
    params = ByAttribute.Params(manifest=str(tmp_path / "nope.csv"), files={"age": str(tmp_path / "spk2age")})
    problems = ByAttribute.missing_paths(params)
    assert len(problems) == 2 and "manifest" in problems[0] and "files.age" in problems[1]


def test_report_md_gives_each_group_its_own_table(tmp_path):
    from vpeval.report.tables import attack_tables

    rng = np.random.default_rng(1)
    speakers, ages, accents = _speakers(rng)
    _write_kaldi(tmp_path / "data", ages, accents)
    metric = _metric(ByAttribute, tmp_path, attributes=["accent"], kaldi=str(tmp_path / "data"), min_speakers=3)
    results = metric.compute(MetricInputs(scores=_scores(rng, speakers)))
    coords = {"anonymizer": "x", "attacker": "a", "scenario": "original", "protocol": "O-A", "n": 1}
    rows = [
        {**coords, "metric": r.metric, "metric_plugin": "by-attribute", "gender": r.gender, "value": r.value,
         "ci_low": r.ci_low, "ci_high": r.ci_high, "unit": r.unit, "details": r.details}
        for r in results
    ]  # fmt: skip
    tables = attack_tables(rows)
    assert len(tables) == 3 and all("| x | a | original |" in t for t in tables)
    for r, table in zip(sorted(rows, key=lambda r: r["gender"]), tables, strict=True):
        assert f"{r['gender']})" in table.splitlines()[0] and f"{r['value']:.2f}" in table


def test_a_corpus_source_declares_age_and_accent(tmp_path):
    """The built-in corpus with speaker_groups: its declared ages, in the declared bands, and accents."""
    corpus = {"use": "synth", "params": {"preset": "demo", "speakers": 12, "speaker_groups": True}}
    metric = _metric(ByAttribute, tmp_path, attributes=["age", "accent"], corpus=corpus, bands={"age": [30, 50]})
    found = metric._attributes(None)
    source = plugin_context(seed=0, work_dir=tmp_path / "s").get("corpus", "synth", corpus["params"])
    declared = source.speaker_attributes()
    assert found["accent"] == declared["accent"] and len(found["accent"]) == 12
    for speaker, age in declared["age"].items():
        assert found["age"][speaker] == ("<30" if int(age) < 30 else "30-50" if int(age) < 50 else ">=50")
    assert set(found["age"].values()) == {"<30", "30-50", ">=50"}
    assert not list(tmp_path.glob("**/manifest.csv"))  # declared without generating the corpus
