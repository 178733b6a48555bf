"""The corpus contract for the two sources the core ships: a CSV manifest and Kaldi data folders
(the latter in VoicePrivacy layout, so its own evaluation plan is checked too)."""

import csv
from pathlib import Path

from vpeval.data.kaldi import write_data_dir
from vpeval.testing.contracts import CorpusContract, ExecutorContract, ReportContract
from vpeval.testing.dummies import make_corpus


def _corpus(tmp_path: Path):
    return make_corpus(tmp_path / "wav", speakers=6, utterances=4, seconds=0.3)


class TestManifestCorpus(CorpusContract):
    plugin_name = "manifest"
    params = {"path": "corpus.csv"}

    def source_params(self, tmp_path):
        corpus = _corpus(tmp_path)
        manifest = tmp_path / "corpus.csv"
        with open(manifest, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["id", "path", "speaker", "gender", "transcript"])
            for u in corpus:
                writer.writerow([u.id, u.path, u.speaker, u.gender, u.transcript])
        return {"path": str(manifest)}


class TestKaldiCorpus(CorpusContract):
    plugin_name = "kaldi"
    params = {"root": "data"}

    def source_params(self, tmp_path):
        """Speakers 0-3 are evaluated (enrollment utterances 0-1, trials 2-3), 4-5 train the attacker."""
        corpus = _corpus(tmp_path)
        root = tmp_path / "data"
        evaluation, train = corpus.speakers[:4], corpus.speakers[4:]
        enroll = [u.id for u in corpus if u.speaker in evaluation and int(u.id[-3:]) < 2]
        tests = [u for u in corpus if u.speaker in evaluation and int(u.id[-3:]) >= 2]
        write_data_dir(corpus.subset(enroll), root / "enrolls")
        write_data_dir(corpus.with_speakers(train), root / "train")
        trials = write_data_dir(corpus.subset([u.id for u in tests]), root / "trials")
        lines = [f"{s} {u.id} {'target' if u.speaker == s else 'nontarget'}" for s in evaluation for u in tests]
        (trials / "trials").write_text("\n".join(lines) + "\n")
        return {
            "root": str(root),
            "attacker_train": "train",
            "evaluation": [{"enrolls": "enrolls", "trials": ["trials"]}],
        }

    def test_the_layout_brings_its_own_plan(self, tmp_path):
        from vpeval.settings import PlanSettings

        source = self._source(tmp_path)
        plan = source.evaluation_plan(source.load(), PlanSettings())
        assert plan is not None and len(plan.trial_lists[1]) == 4 * 8


class TestLocalExecutor(ExecutorContract):
    plugin_name = "local"
    params = {"workers": 2}


class TestPaperReport(ReportContract):
    plugin_name = "paper"
