"""The `precomputed` anonymizer: returns the audio another toolkit wrote for each utterance id."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from vpeval.api import Anonymizer, Params, Voice
from vpeval.audio import check_audio, read_audio
from vpeval.data.vpc import CHALLENGES, anonymized, evaluation_folders
from vpeval.errors import DataError
from vpeval.types import Corpus, Utterance
from vpeval_precomputed.identical import identical_note
from vpeval_precomputed.index import SHOWN, PrecomputedSet, load_precomputed
from vpeval_precomputed.repair import repair_folder


class VoicePrivacySubmission(Params):
    """A system's anonymized copies of the VoicePrivacy folders (vpeval.data.vpc): `root`/<folder><suffix>."""

    root: str = Field(description="The challenge's data folder holding the anonymized copies.")
    suffix: str = Field(min_length=1, description="The system's suffix, for example _B3 or _mcadams.")
    challenge: Literal["2024", "2026-track1", "2026-track2"] = "2024"
    datasets: list[str] | None = Field(None, description="Evaluation sets (default: the challenge's).")
    trials: Literal["gender", "mixed"] | None = Field(None, description="Trial folders (default: the challenge's).")
    train: bool | str = Field(
        True,
        description="Also the anonymized attacker-train folder (for semi-informed attackers): true for the "
        "challenge's (train-clean-360), or a folder name (VPC 2026 Track 2: train_german, ...).",
    )
    utility: bool = Field(True, description="Also the anonymized utility sets (IEMOCAP_dev, IEMOCAP_test).")

    def folders(self) -> list[str]:
        return [str(anon) for _, anon in self.pairs()]

    def pairs(self) -> list[tuple[Path, Path]]:
        """(original folder, its anonymized copy) for every folder of the submission."""
        challenge = CHALLENGES[self.challenge]
        names = evaluation_folders(list(self.datasets or challenge.datasets), self.trials or challenge.trials)
        names += [self.train if isinstance(self.train, str) else challenge.train] if self.train else []
        names += list(challenge.utility) if self.utility else []
        root = Path(self.root)
        return [(root / name, root / anon) for name, anon in zip(names, anonymized(names, self.suffix))]


class Precomputed(Anonymizer):
    """Anonymized speech made outside vpeval, looked up by utterance id in VoicePrivacy data folders or a manifest.

    Each utterance the run anonymizes is replaced by the file listed under its id, as stored: at the
    file's own rate, float files as float32 beyond +-1 too (the challenge's toolkit reads them with
    torchaudio / soundfile so, and its evaluation resamples them). `level` and the voice's random
    generator play no part: the pseudo-speakers were chosen by the toolkit that wrote the files.
    """

    name = "precomputed"
    sample_rate = None  # any rate in; what comes out has the file's own rate (output_rate)
    output_subtype = "FLOAT"  # lossless for 16-bit, 24-bit and float32 files alike
    reads_input = False  # the stored file of each utterance, whatever audio a chain step before it made
    duration_band = (0.25, 4.0)  # another toolkit's system may re-time speech (TTS); 30 times is no utterance's copy

    class Params(Params):
        folders: list[str] = Field(
            default_factory=list,
            description="Kaldi / VoicePrivacy data folders of anonymized speech (wav.scp, utt2spk; the "
            "original utterance ids), for example [data/libri_dev_enrolls_B3, data/libri_dev_trials_f_B3]; "
            "wav.scp shell pipes run only with `vpeval --allow-pipes`.",
        )
        manifest: str | None = Field(
            None,
            description="A CSV or JSONL manifest of anonymized speech read like the `manifest` corpus "
            "(path and speaker required; id, or the file stem as the corpus derives it).",
        )
        vpc: VoicePrivacySubmission | None = Field(
            None,
            description="A VoicePrivacy submission by the challenge's folder names: {root, suffix, challenge, "
            "datasets, trials, train}; adds root/<folder><suffix> for every evaluation folder (and train-clean-360).",
        )

        @model_validator(mode="after")
        def _has_a_source(self):
            if not self.folders and self.manifest is None and self.vpc is None:
                raise ValueError("give `folders` (data folders of anonymized speech), `manifest` or `vpc`")
            return self

        def all_folders(self) -> list[str]:
            return list(self.folders) + (self.vpc.folders() if self.vpc else [])

    @classmethod
    def missing_paths(cls, params) -> list[str]:
        if params.vpc is not None and not Path(params.vpc.root).is_dir():  # one sentence, not one per folder
            return [
                f"the folder {params.vpc.root} of `vpc.root` does not exist; set it to the data folder holding the "
                "submission's anonymized copies."
            ]
        repairable = {str(anon) for _, anon in params.vpc.pairs()} if params.vpc is not None else set()

        def unreadable(folder: str) -> bool:  # a submission's folder without wav.scp is built from its .wav files
            if (Path(folder) / "wav.scp").is_file():
                return False
            return folder not in repairable or not Path(folder).is_dir() or not next(Path(folder).rglob("*.wav"), None)

        missing = [folder for folder in params.all_folders() if unreadable(folder)]
        if repairable and repairable <= set(missing):  # none of the submission's folders: one sentence, not nine
            names = ", ".join(Path(f).name for f in params.vpc.folders())
            missing = [m for m in missing if m not in repairable]
            lines = [
                f"none of the submission's folders {names} under {params.vpc.root} has a wav.scp or .wav files; write "
                "the system's output there (the original folder's name plus the suffix, the same utterance ids), "
                "or fix `vpc.suffix`."
            ]
        else:
            lines = []
        return (
            lines
            + [
                f"the anonymized data folder {folder} has no wav.scp"
                + (" and no .wav files under it" if folder in repairable else "")
                + "; write the system's output there (the original folder's name plus the system's suffix, the same "
                "utterance ids), or fix `folders` / `vpc.suffix`."
                for folder in missing
            ]
            + (
                [f"the manifest {params.manifest} does not exist."]
                if params.manifest and not Path(params.manifest).is_file()
                else []
            )
        )

    _set: PrecomputedSet | None = None

    def prepare(self) -> None:
        index = self._index()
        self.context.log.info("precomputed: %d utterances from %s", len(index), index.where())

    def expect(self, utterances: Sequence[Utterance]) -> None:
        """Refuse, before any audio is processed, utterances without precomputed audio or file.

        The core calls it with each part of the run (evaluation, attacker training) before its first
        utterance; ids the set holds beyond those are normal: a VoicePrivacy folder set covers more
        than one run uses.
        """
        index = self._index()
        wanted = list(dict.fromkeys(u.id for u in utterances))
        missing = [i for i in wanted if i not in index]
        if missing:
            raise DataError(index.missing_sentence(missing, len(wanted)))
        absent = [i for i in wanted if not Path(index.utterances[i].path).is_file()]
        if absent:
            first = ", ".join(index.utterances[i].path for i in absent[:SHOWN])
            raise DataError(
                f"anonymizer precomputed: {len(absent)} of the {len(wanted)} precomputed files do not exist "
                f"(first: {first}); write them or fix the paths in {index.origin[absent[0]]}."
            )
        self.context.log.info(
            "precomputed: all %d utterances have audio; %d more in the set are not used",
            len(wanted),
            len(index) - len(wanted),
        )
        self._say_rates([index.utterances[i].path for i in wanted], {u.id: u.sample_rate for u in utterances})
        if note := identical_note([(u, index.utterances[u.id]) for u in {u.id: u for u in utterances}.values()]):
            self.context.log.warning(note)

    def _say_rates(self, paths: list[str], original_rates: dict[str, int | None]) -> None:
        """One line per stored rate unlike the originals': those files are kept at it, never resampled here."""
        rates = Counter(check_audio(path)[1] for path in paths)
        known = {rate for rate in original_rates.values() if rate}
        for rate, count in sorted(rates.items()):
            if known and rate not in known:
                self.context.log.info(
                    "precomputed: %s files at %d Hz (the originals: %s Hz) kept at their rate; each evaluation "
                    "resamples them where the challenge's toolkit does",
                    f"{count:,}",
                    rate,
                    "/".join(str(r) for r in sorted(known)),
                )

    def input_fingerprint(self) -> str:
        """The ids and file contents of the precomputed set: regenerated files make a new cache entry."""
        from vpeval.data.fingerprint import corpus_fingerprint

        index = self._index()
        cache_root = self.context.options.get("cache_root")
        hashes = Path(cache_root) / "fingerprints" if cache_root else None  # the run's file-hash index
        return corpus_fingerprint(Corpus("precomputed", list(index.utterances.values()), {}), hashes)

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        found = self._found(voice)
        return read_audio(found.path, channel=found.channel)[0]

    def stored_file(self, utterance: Utterance) -> str | None:
        """The submission's file of `utterance`: the core's audio gate names it when it refuses what it holds."""
        found = self._index().utterances.get(utterance.id)
        return found.path if found is not None else None

    def output_rate(self, sample_rate: int, voice: Voice) -> int:
        """The file's own rate: the evaluation resamples where the toolkit does (its ASV after the peak
        normalisation), so the file is kept as stored here."""
        return check_audio(self._found(voice).path)[1]

    def _found(self, voice: Voice) -> Utterance:
        # The core passes the source utterance; a caller without one names the utterance by key.
        uid = voice.utterance.id if voice.utterance is not None else voice.key
        index = self._index()
        found = index.utterances.get(uid)
        if found is None:
            raise DataError(index.missing_sentence([uid]))
        return found

    def _index(self) -> PrecomputedSet:
        if self._set is None:
            # Pipes run commands: only the person running vpeval allows them (--allow-pipes), never a file.
            allow_pipes = bool(self.context.options.get("allow_pipes"))
            self._set = load_precomputed(
                list(self.params.folders) + self._vpc_folders(),
                self.params.manifest,
                allow_pipes,
                self.context.folder("pipes"),
            )
        return self._set

    def _vpc_folders(self) -> list[str]:
        """The submission's folders, each repaired as the toolkit repairs it (repair.py), every repair logged."""
        if self.params.vpc is None:
            return []
        folders = []
        self.repairs: list[str] = []
        for original, anon in self.params.vpc.pairs():
            folder, repairs = repair_folder(anon, original, self.context.folder("repaired"))
            folders.append(str(folder))
            self.repairs += repairs
        for line in self.repairs:
            self.context.log.warning("precomputed: %s", line)
        return folders
