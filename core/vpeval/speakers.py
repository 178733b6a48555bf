"""Speaker pools that several plugins share: how a plugin names a corpus or a speaker encoder in its
parameters, and the speaker embeddings of a corpus, computed once through an encoder plugin and cached.

A pool is either a corpus named like the experiment names corpora ({use, params}) embedded by a
speaker encoder plugin, or a user's precomputed `.npz` file with arrays `embeddings` [U, D],
`speakers` [U] and optionally `emotions` [U] and `genders` [U].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from vpeval.api import Params, PluginContext, PluginRef, stable_int
from vpeval.errors import DataError

# A corpus plugin that takes the experiment seed by default would repeat the evaluation corpus's
# first speakers in a pool it generates; pools take this seed (and neighbours of it) instead.
POOL_SEED = 9_000_001


class CorpusSpec(Params):
    """A corpus the way an experiment names one."""

    use: Annotated[str, PluginRef("corpus", params="params")] = Field(description="Corpus source plugin name.")
    params: dict[str, Any] = Field(default_factory=dict, description="Its parameters.")


class EncoderSpec(Params):
    """A speaker encoder plugin and its parameters."""

    use: Annotated[str, PluginRef("encoder", params="params")] = Field(description="Speaker encoder plugin name.")
    params: dict[str, Any] = Field(default_factory=dict, description="Its parameters.")


@dataclass
class PoolEmbeddings:
    embeddings: np.ndarray  # [U, D] one row per utterance
    speakers: np.ndarray  # [U] speaker label per row
    emotions: np.ndarray | None = None  # [U] emotion label per row, where known
    genders: np.ndarray | None = None  # [U] "f"/"m" per row, where known
    speaker_ids: list[str] = field(init=False)
    speaker_means: np.ndarray = field(init=False)  # [S, D] mean vector per speaker
    speaker_genders: list[str | None] = field(init=False)

    def __post_init__(self) -> None:
        self.embeddings = np.asarray(self.embeddings, dtype=np.float64)
        self.speakers = np.asarray(self.speakers).astype(str)
        self.speaker_ids = sorted(set(self.speakers.tolist()))
        index = {s: i for i, s in enumerate(self.speaker_ids)}
        rows = np.array([index[s] for s in self.speakers])
        sums = np.zeros((len(self.speaker_ids), self.embeddings.shape[1]))
        np.add.at(sums, rows, self.embeddings)
        self.speaker_means = sums / np.bincount(rows, minlength=len(self.speaker_ids))[:, None]
        self.speaker_genders = [None] * len(self.speaker_ids)
        if self.genders is not None:
            for s, g in zip(self.speakers, self.genders, strict=True):
                self.speaker_genders[index[s]] = str(g) if g is not None else None

    @property
    def labels(self) -> np.ndarray:
        """Speaker index per row (into speaker_ids)."""
        index = {s: i for i, s in enumerate(self.speaker_ids)}
        return np.array([index[s] for s in self.speakers])


def read_npz(path: str | Path, field_name: str) -> PoolEmbeddings:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{field_name} file {path} does not exist; give an .npz with 'embeddings' and 'speakers'.")
    with np.load(path, allow_pickle=False) as data:
        missing = {"embeddings", "speakers"} - set(data.files)
        if missing:
            raise DataError(f"{field_name} file {path} lacks the arrays {sorted(missing)}; save them with np.savez.")
        if data["embeddings"].ndim != 2 or len(data["embeddings"]) != len(data["speakers"]):
            raise DataError(f"{field_name} file {path} needs embeddings [U, D] and speakers [U] of equal length.")
        return PoolEmbeddings(
            embeddings=data["embeddings"],
            speakers=data["speakers"],
            emotions=data["emotions"] if "emotions" in data.files else None,
            genders=data["genders"] if "genders" in data.files else None,
        )


def embed_corpus(context: PluginContext, corpus: CorpusSpec, encoder: EncoderSpec) -> PoolEmbeddings:
    """Embed every utterance of the corpus with the encoder; cached under the context's work_dir."""
    source = context.get("corpus", corpus.use, dict(corpus.params))
    loaded = source.load()
    if len(loaded) == 0:
        raise DataError(f"pool corpus {corpus.use} {corpus.params} has no utterances; name a corpus with speech.")
    key = stable_int(loaded.fingerprint or loaded.name, encoder.use, sorted(encoder.params.items()))
    cache = context.folder("pool") / f"{corpus.use}-{encoder.use}-{key:016x}.npz"
    utts = loaded.utterances
    if cache.is_file():
        return read_npz(cache, "cached pool")
    model = context.get("encoder", encoder.use, dict(encoder.params))
    embeddings = np.asarray(model.embed_corpus(loaded), dtype=np.float64)
    arrays = {
        "embeddings": embeddings,
        "speakers": np.array([u.speaker for u in utts]),
        "emotions": np.array([u.emotion or "" for u in utts]),
        "genders": np.array([u.gender or "" for u in utts]),
    }
    np.savez(cache, **arrays)
    return read_npz(cache, "cached pool")


def load_pool(context: PluginContext, vectors: str | None, corpus: CorpusSpec, encoder: EncoderSpec) -> PoolEmbeddings:
    """The precomputed vectors file when given, else the corpus embedded by the encoder."""
    if vectors:
        return read_npz(vectors, "pool_vectors")
    return embed_corpus(context, corpus, encoder)


def embedding_anonymizer_in_space(
    context: PluginContext, name: str, params: dict[str, Any], pool: CorpusSpec, encoder: EncoderSpec, refusal: str
):
    """The embedding anonymizer `name` through the core, its vectors in the caller's speaker space.

    A waveform anonymizer that asks an embedding anonymizer for pseudo-speaker vectors needs them in its
    own space: the anonymizer gets the caller's `pool` and `encoder` where its parameters have fields of
    those names that `params` leaves unset. `refusal` is the sentence (a ConfigError) for a named plugin
    that does not work on embeddings.
    """
    from vpeval.errors import ConfigError

    anonymizer = context.get("anonymizer", name, dict(params))
    if "embedding" not in anonymizer.works_on:
        raise ConfigError(refusal)
    ours = {"pool": pool.model_dump(), "encoder": encoder.model_dump()}
    shared = {k: v for k, v in ours.items() if k in anonymizer.Params.model_fields and k not in params}
    if not shared:
        return anonymizer
    return context.get("anonymizer", name, {**shared, **params})


def speaker_vector(encoder: Any, audio: np.ndarray, rate: int) -> np.ndarray:
    """`encoder`'s speaker vector of `audio` (at `rate`, resampled to the encoder's), as float64."""
    from vpeval.audio import resample

    return np.asarray(encoder.embed(resample(audio, rate, encoder.sample_rate)), dtype=np.float64)
