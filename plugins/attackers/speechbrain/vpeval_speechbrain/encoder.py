"""The "speechbrain" speaker encoder: a SpeechBrain speaker-embedding folder, read without running its YAML."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from vpeval.api import SpeakerEncoder
from vpeval.types import Corpus
from vpeval_speechbrain.params import SpeechBrainParams


class SpeechBrainEncoder(SpeakerEncoder):
    """Embeddings of a SpeechBrain ECAPA-TDNN or x-vector folder, as VoicePrivacy's EncoderClassifier path."""

    name: ClassVar[str] = "speechbrain"
    sample_rate: ClassVar[int] = 16000
    device_sensitive: ClassVar[bool] = True
    Params: ClassVar[type[SpeechBrainParams]] = SpeechBrainParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        from vpeval_speechbrain.service import FolderEmbeddings  # torch: on use, not on import

        self.folder = FolderEmbeddings(self.params, self.context, self.name)

    @classmethod
    def missing_paths(cls, params: SpeechBrainParams) -> list[str]:
        from vpeval_speechbrain.paths import missing

        return missing(f"encoder {cls.name}:", params.source, params.ssl_model)

    def prepare(self) -> None:
        """Load the folder; `dim` becomes its embedding size."""
        self.folder.prepare()
        self.dim = self.folder.dim

    def embed(self, audio: np.ndarray) -> np.ndarray:
        self.prepare()
        return self.folder.embed_audio([audio])[0]

    def embed_batch(self, audios: Sequence[np.ndarray]) -> np.ndarray:
        """Batches of similar length (packed for the released layouts; see service.FolderEmbeddings)."""
        self.prepare()
        return self.folder.embed_audio(list(audios))

    def embed_corpus(self, corpus: Corpus) -> np.ndarray:
        self.prepare()
        return np.stack(self.folder.embed_utterances(corpus.utterances, f"{self.name}: embed"))
