"""The `precomputed` anonymizer: returns the audio another toolkit wrote for each utterance id."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import Field, model_validator

from vpeval.api import Anonymizer, Params, Voice
from vpeval.audio import read_audio
from vpeval.errors import DataError
from vpeval.types import Corpus, Utterance
from vpeval_precomputed.index import SHOWN, PrecomputedSet, load_precomputed


class Precomputed(Anonymizer):
    """Anonymized speech made outside vpeval, looked up by utterance id in VoicePrivacy data folders or a manifest.

    Each utterance the run anonymizes is replaced by the file listed under its id, resampled to the
    rate asked for. `level` and the voice's random generator play no part: the pseudo-speakers were
    chosen by the toolkit that wrote the files.
    """

    name = "precomputed"
    sample_rate = None  # any rate: the file is resampled to the rate of the utterance it replaces

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

        @model_validator(mode="after")
        def _has_a_source(self):
            if not self.folders and self.manifest is None:
                raise ValueError("give `folders` (data folders of anonymized speech) or `manifest`, or both")
            return self

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

    def input_fingerprint(self) -> str:
        """The ids and file contents of the precomputed set: regenerated files make a new cache entry."""
        from vpeval.data.fingerprint import corpus_fingerprint

        index = self._index()
        cache_root = self.context.options.get("cache_root")
        hashes = Path(cache_root) / "fingerprints" if cache_root else None  # the run's file-hash index
        return corpus_fingerprint(Corpus("precomputed", list(index.utterances.values()), {}), hashes)

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        # The core passes the source utterance; a caller without one names the utterance by key.
        uid = voice.utterance.id if voice.utterance is not None else voice.key
        index = self._index()
        found = index.utterances.get(uid)
        if found is None:
            raise DataError(index.missing_sentence([uid]))
        return read_audio(found.path, sample_rate=sample_rate, channel=found.channel)[0]

    def _index(self) -> PrecomputedSet:
        if self._set is None:
            # Pipes run commands: only the person running vpeval allows them (--allow-pipes), never a file.
            allow_pipes = bool(self.context.options.get("allow_pipes"))
            self._set = load_precomputed(
                self.params.folders, self.params.manifest, allow_pipes, self.context.folder("pipes")
            )
        return self._set
