"""The built-in corpus sources: a CSV/JSONL manifest, and Kaldi / VoicePrivacy data folders."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from vpeval.api import CorpusSource, Params, PluginContext
from vpeval.data.fingerprint import corpus_fingerprint
from vpeval.data.kaldi import read_data_dir
from vpeval.data.manifest import read_manifest
from vpeval.data.plan import PredefinedSet, TrialFolder, predefined_plan
from vpeval.data.textfile import read_table
from vpeval.data.vpc import CHALLENGES, enrolls_folder, trial_folders
from vpeval.errors import DataError
from vpeval.settings import PlanSettings
from vpeval.types import Corpus, EvaluationPlan


class ManifestCorpus(CorpusSource):
    """Utterances listed in a CSV or JSONL manifest (path, speaker, gender, transcript, emotion, session)."""

    name = "manifest"

    class Params(Params):
        path: str = Field(description="The manifest file (.csv, .tsv or .jsonl).")
        root: str | None = Field(
            None, description="Folder that relative audio paths start from (default: the manifest's folder)."
        )

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        missing = []
        if not Path(params.path).exists():
            missing.append(f"the manifest {params.path} does not exist; set the manifest corpus's `path` to the file.")
        if params.root is not None and not Path(params.root).is_dir():
            missing.append(f"the manifest's audio root {params.root} is not a folder; set `root` to the audio folder.")
        return missing

    def load(self) -> Corpus:
        corpus = read_manifest(self.params.path, root=self.params.root)
        corpus.fingerprint = corpus_fingerprint(corpus, _fingerprint_cache(self.context))
        return corpus


class EvaluationSet(Params):
    """A VoicePrivacy evaluation set: its enrollment folder and its trial folders."""

    enrolls: str = Field(description="Enrollment folder under root, for example libri_dev_enrolls.")
    trials: list[str] = Field(
        description="Trial folders under root, each with a `trials` file, for example "
        "[libri_dev_trials_f, libri_dev_trials_m]; an _f/_m suffix gives the trials' gender."
    )


class KaldiCorpus(CorpusSource):
    """Kaldi / VoicePrivacy data folders (wav.scp, utt2spk, spk2gender, text, utt2emo, trials)."""

    name = "kaldi"

    class Params(Params):
        root: str = Field(description="Folder that holds the data folders (a recipe's data/).")
        sets: list[str] | None = Field(
            None, description="Data folders under root to load (default: every folder with a wav.scp)."
        )
        attacker_train: str | None = Field(
            None, description="Data folder of attacker-train speech (VoicePrivacy: train-clean-360)."
        )
        utility: list[str] = Field(
            default_factory=list,
            description="Data folders for the speech metrics only (VoicePrivacy: IEMOCAP_dev, IEMOCAP_test for UAR "
            "and WER): anonymized and heard by WER/UAR, in no trial; with `evaluation` only.",
        )
        evaluation: list[EvaluationSet] | None = Field(
            None,
            description="VoicePrivacy evaluation sets, each {enrolls: folder, trials: [folders with a `trials` "
            "file]}: use their trials instead of drawing them (N = 1 only); without it vpeval splits speakers "
            "and draws trials from the experiment's settings.",
        )
        allow_pipes: bool = Field(
            False,
            description="Refused when true: wav.scp lines that are shell pipes (cmd |) run only with "
            "`vpeval --allow-pipes` on the command line (their output is cached).",
        )

        @field_validator("allow_pipes")
        @classmethod
        def _command_line_only(cls, value: bool) -> bool:
            if value:  # an experiment file may come from someone else: only the command line allows commands
                raise ValueError(
                    "shell pipes in wav.scp run commands, so only the command line can allow them: "
                    "remove `allow_pipes` and run `vpeval --allow-pipes ...`"
                )
            return value

        @model_validator(mode="after")
        def _train_folder_needs_evaluation(self):
            if self.attacker_train and not self.evaluation:  # else every folder is one corpus, split at random
                raise ValueError(
                    f"`attacker_train` ({self.attacker_train}) is used only with `evaluation` folders: add "
                    "`evaluation: [{enrolls: ..., trials: [...]}]`, or remove `attacker_train` and list the folder "
                    "in `sets` to have its speakers split with the rest"
                )
            return self

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        root = Path(params.root)
        if not root.is_dir():
            return [f"the Kaldi data root {root} does not exist; set the kaldi corpus's `root` to its data folders."]
        names = list(params.sets or []) + ([params.attacker_train] if params.attacker_train else []) + params.utility
        names += [name for entry in params.evaluation or [] for name in (entry.enrolls, *entry.trials)]
        return [
            f"{root} has no data folder {name} (with a wav.scp); fix the name in the kaldi corpus params."
            for name in dict.fromkeys(names)
            if not (root / name / "wav.scp").is_file()
        ]

    def _folders(self) -> list[str]:
        root = Path(self.params.root)
        if not root.is_dir():
            raise DataError(
                f"Kaldi root {root} is not a folder; set the kaldi corpus's `root` to the folder of data folders."
            )
        names = (
            list(self.params.sets)
            if self.params.sets is not None
            else sorted(p.name for p in root.iterdir() if (p / "wav.scp").is_file())
        )
        if self.params.attacker_train:
            names.append(self.params.attacker_train)
        names += self.params.utility
        for entry in self.params.evaluation or []:
            names += [entry.enrolls, *entry.trials]
        names = list(dict.fromkeys(names))
        if not names:
            raise DataError(
                f"Kaldi root {root} holds no folder with a wav.scp; point `root` at a recipe's data folder."
            )
        for name in names:
            if not (root / name).is_dir():
                raise DataError(
                    f"Kaldi root {root} has no data folder {name}; fix the name in the kaldi corpus params."
                )
        return names

    def load(self) -> Corpus:
        root = Path(self.params.root)
        allow_pipes = self.params.allow_pipes or bool(self.context.options.get("allow_pipes"))
        folders = {
            name: read_data_dir(root / name, allow_pipes=allow_pipes, pipe_cache=self.context.folder("pipes"))
            for name in self._folders()
        }
        counts = Counter(u.id for c in folders.values() for u in c.utterances)
        # Speakers recur across folders (enrolls and trials); an utterance id in two folders is a copy
        # (an anonymized set, say), so both copies get their folder name as prefix.
        renamed = {
            name: {u.id: f"{name}-{u.id}" for u in c.utterances if counts[u.id] > 1} for name, c in folders.items()
        }
        utterances, genders, origin = [], {}, {}
        listed_in: dict[str, str] = {}
        for name, c in folders.items():
            utterances += [u.replace(id=renamed[name][u.id]) if u.id in renamed[name] else u for u in c.utterances]
            for u in c.utterances:
                final = renamed[name].get(u.id, u.id)
                if final in listed_in:  # a prefixed id met an id written so in another folder
                    raise DataError(
                        f"The id {final} stands for two utterances after prefixing ids found in several folders: "
                        f"{listed_in[final]} and {name}/wav.scp ({u.id}); rename one in its folder's files."
                    )
                listed_in[final] = f"{name}/wav.scp" + ("" if final == u.id else f" ({u.id})")
            genders.update(c.speaker_gender)
            origin.update((renamed[name].get(i, i), where) for i, where in c.info.get("origin", {}).items())
        info: dict[str, Any] = {
            "source": str(root),
            "origin": origin,
            "kaldi_sets": {name: [renamed[name].get(u.id, u.id) for u in c.utterances] for name, c in folders.items()},
            "kaldi_renamed": {name: m for name, m in renamed.items() if m},
        }
        corpus = Corpus(root.resolve().name, utterances, genders, info=info)
        corpus.fingerprint = corpus_fingerprint(corpus, _fingerprint_cache(self.context))
        return corpus

    def evaluation_plan(self, corpus: Corpus, settings: PlanSettings) -> EvaluationPlan | None:
        if not self.params.evaluation:
            return None
        sets_ids: dict[str, list[str]] = corpus.info.get("kaldi_sets", {})
        renamed: dict[str, dict[str, str]] = corpus.info.get("kaldi_renamed", {})
        root = Path(self.params.root)

        def folder(name: str) -> tuple[Corpus, set[str]]:
            if name not in sets_ids:
                raise DataError(
                    f"Corpus {corpus.name} was not loaded with the data folder {name}; load it with this kaldi source."
                )
            present = [i for i in sets_ids[name] if i in corpus]  # on_bad_audio: skip may have dropped some
            return corpus.subset(present, name=name), set(sets_ids[name]) - set(present)

        sets = []
        for entry in self.params.evaluation:
            enrolls, dropped = folder(entry.enrolls)
            all_enroll_speakers = {corpus[i].speaker for i in sets_ids[entry.enrolls] if i in corpus}
            trial_folders = []
            for name in entry.trials:
                trials_corpus, gone = folder(name)
                dropped |= gone
                trial_folders.append(TrialFolder(name, root / name / "trials", trials_corpus, renamed.get(name, {})))
            lost_speakers = set()
            if dropped:
                lost_speakers = _speakers_of(root / entry.enrolls) - all_enroll_speakers
            sets.append(PredefinedSet(enrolls, trial_folders, dropped, lost_speakers))
        train = None
        if self.params.attacker_train:
            train, _ = folder(self.params.attacker_train)
        utility = [folder(name)[0] for name in self.params.utility]
        return predefined_plan(sets, train, settings, name=corpus.name, utility=utility)


class VoicePrivacyCorpus(CorpusSource):
    """A VoicePrivacy Challenge data folder (2024, 2026 Track 1) by the challenge's own set names."""

    name = "vpc"

    class Params(Params):
        root: str = Field(description="The challenge's data folder (its recipes' `data/`: libri_dev_enrolls, ...).")
        challenge: Literal["2024", "2026-track1", "2026-track2"] = Field(
            "2024", description="Which challenge's sets and trial folders (vpeval.data.vpc.CHALLENGES)."
        )
        datasets: list[str] | None = Field(
            None, description="Evaluation sets (default: the challenge's, libri_dev and libri_test)."
        )
        trials: Literal["gender", "mixed"] | None = Field(
            None,
            description="Trial folders: gender (_trials_f, _trials_m; VPC 2024) or mixed (_trials_mixed, the "
            "gender-mixed trials of VPC 2026); default: the challenge's.",
        )
        train: str | None = Field(
            "train-clean-360",
            description="Attacker-train folder (the semi-informed attacker's speech; null: none). Anonymized "
            "copies come from the `precomputed` anonymizer.",
        )
        utility: bool = Field(
            True, description="Also the challenge's utility sets (IEMOCAP_dev, IEMOCAP_test) for UAR and WER."
        )

    def kaldi_params(self) -> KaldiCorpus.Params:
        """The same data as a `kaldi` corpus: the folders the challenge's config lists."""
        challenge = CHALLENGES[self.params.challenge]
        datasets = list(self.params.datasets or challenge.datasets)
        trials = self.params.trials or challenge.trials
        return KaldiCorpus.Params(
            root=self.params.root,
            sets=[],
            attacker_train=self.params.train,
            utility=list(challenge.utility) if self.params.utility else [],
            evaluation=[EvaluationSet(enrolls=enrolls_folder(d), trials=trial_folders(d, trials)) for d in datasets],
        )

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        root = Path(params.root)
        if not root.is_dir():
            return [f"the VoicePrivacy data folder {root} does not exist; set `root` to the challenge's data/ folder."]
        evaluation = cls(params).kaldi_params().evaluation or []
        folders = [name for e in evaluation for name in (e.enrolls, *e.trials)]
        folders += [params.train] if params.train else []
        folders += cls(params).kaldi_params().utility
        return [
            f"{root} has no data folder {name} (with a wav.scp); make it with the challenge's data preparation, "
            "or choose the sets with `datasets`, `trials` and `train`."
            for name in folders
            if not (root / name / "wav.scp").is_file()
        ]

    def _kaldi(self) -> KaldiCorpus:
        return KaldiCorpus(self.kaldi_params(), self.context)

    def load(self) -> Corpus:
        return self._kaldi().load()

    def evaluation_plan(self, corpus: Corpus, settings: PlanSettings) -> EvaluationPlan | None:
        return self._kaldi().evaluation_plan(corpus, settings)


def _fingerprint_cache(context: PluginContext) -> Path:
    """The run cache's file-hash index when the runner names one (shared with the core), else our own."""
    cache_root = context.options.get("cache_root")
    return Path(cache_root) / "fingerprints" if cache_root else context.folder("fingerprints")


def _speakers_of(folder: Path) -> set[str]:
    """Speakers a data folder lists (utt2spk), to tell a skipped speaker from an unknown one."""
    utt2spk = folder / "utt2spk"
    if not utt2spk.is_file():
        return set()
    return {spk for _, (_, spk) in read_table(utt2spk, ("utt-id", "speaker-id"))}
