"""The data of each curriculum stage (paper section 2.2) and the Stage II / target overlap check.

Stage I: the original attacker-training speech, or the corpus stage1.corpus names (VoxCeleb2 in the
paper). Stage II: that speech converted by every anonymizer in stage2_anonymizers, and the converted
corpora of stage2_corpora (SSTC's systems in the paper); labels stay the source speakers. Stage III: the
target anonymizer's output (train_on: anonymized), or the corpus stage3.corpus names, a share of every
speaker's utterances. So the three stages can read three corpora in one experiment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vpeval.api import PluginContext, Voice
from vpeval.errors import DataError, PluginError
from vpeval.types import Corpus, TrainingData, Utterance
from vpeval_dast.params import DastParams


def overlap_errors(params: DastParams, targets: Mapping[str, Sequence[str]]) -> list[str]:
    """One sentence per Stage II anonymizer that is also a target: `targets` maps each evaluated
    anonymizer's label to the plugin names of its steps. Disjointness is by plugin name: the same
    conversion method with other parameters is not an unseen system."""
    if "II" not in params.stages:
        return []
    errors = []
    for i, converted in enumerate(params.stage2_corpora):  # a converted corpus is known by its label only
        for label, uses in targets.items():
            if converted.label is not None and (converted.label == label or converted.label in uses):
                errors.append(
                    f"stage2_corpora[{i}] is labelled {converted.label}, like the target anonymizer '{label}'; "
                    f"Stage II must see only systems disjoint from the targets (paper section 3.1): remove it, or "
                    "label it with the system that converted it."
                )
    for i, system in enumerate(params.stage2_anonymizers):
        for label, uses in targets.items():
            if system.use in uses:
                errors.append(
                    f"stage2_anonymizers[{i}] converts Stage II speech with {system.use}, which the target "
                    f"anonymizer '{label}' also uses; Stage II must see only systems disjoint from the targets "
                    f"(paper section 3.1): remove {system.use} from stage2_anonymizers or '{label}' from anonymizers."
                )
    return errors


def split_stages(data: TrainingData) -> tuple[Corpus | None, Corpus | None]:
    """(original speech, target-anonymized speech) among the core's training stages."""
    original = [s.corpus for s in data.stages if s.system == "original"]
    anonymized = [s.corpus for s in data.stages if s.system != "original"]
    if len(anonymized) > 1:
        raise DataError(
            f"DAST's Stage III adapts to one target anonymizer, but the training data holds "
            f"{len(anonymized)} anonymized stages; give one."
        )
    return (original[0] if original else None), (anonymized[0] if anonymized else None)


def read_corpus(spec, context: PluginContext, field: str) -> Corpus:
    """The corpus a stage names (a corpus plugin's `load`), refused with one sentence when it is empty."""
    corpus = context.get("corpus", spec.use, dict(spec.params)).load()
    if not corpus.utterances:
        raise DataError(f"{field}: the {spec.use} corpus {dict(spec.params)} holds no utterances; check its path.")
    return corpus


def fraction_per_speaker(corpus: Corpus, fraction: float, context: PluginContext) -> list[Utterance]:
    """ceil(fraction x n) of each speaker's n utterances (at least one), drawn from the seed, corpus order kept."""
    keep: set[str] = set()
    for speaker, utts in corpus.by_speaker().items():
        count = max(1, int(np.ceil(fraction * len(utts) - 1e-9)))
        chosen = context.rng("stage3-fraction", speaker).permutation(len(utts))[:count]
        keep.update(utts[i].id for i in chosen)
    return [u for u in corpus.utterances if u.id in keep]


def _folder_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def _conversion_folder(system, anonymizer, params: DastParams, context: PluginContext) -> Path:
    """Where a Stage II system's conversions go: in a run, a folder of the run cache named by everything a
    conversion depends on (system, its parameters and code, voice level, seed), so that the run's dast
    attackers with Stage II (II, I+II, ...) convert each utterance once; outside a run, the work folder."""
    from vpeval.codehash import code_fingerprint
    from vpeval.content_cache import identity_digest

    root = context.options.get("cache_root")
    if not root:
        return context.folder("stage2", _folder_name(system.name))
    identity = identity_digest(
        system.use,
        json.dumps(system.params, sort_keys=True),
        system.name,
        params.stage2_level,
        context.seed,
        code_fingerprint(type(anonymizer)),
        anonymizer.sample_rate,
    )
    folder = Path(root) / "work" / "dast-stage2" / f"{_folder_name(system.name)}-{identity[:16]}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def convert_for_stage2(corpus: Corpus | None, params: DastParams, context: PluginContext) -> list[Utterance]:
    """The corpus converted by every Stage II anonymizer (see _conversion_folder for where), then the
    utterances of every pre-converted corpus of stage2_corpora (ids prefixed by the system's name).

    Voices come from the experiment seed: one rng per system and utterance (or speaker at level speaker).
    A conversion already in the folder (same source id and audio bytes) is reused.
    """
    out = _converted_here(corpus, params, context) if params.stage2_anonymizers else []
    for i, converted in enumerate(params.stage2_corpora):
        read = read_corpus(converted, context, f"stage2_corpora[{i}]")
        out += [u.replace(id=f"{converted.name}/{u.id}") for u in read.utterances]
    return out


@dataclass(frozen=True)
class _Conversion:
    """Converts one utterance for a Stage II system into its folder (or finds it there): a module-level
    callable, so that workers can be spawned for it once CUDA has started (a closure would not pickle and
    would run in this process)."""

    anonymizer: Any
    folder: Path
    system: str
    level: str
    context: PluginContext

    def __call__(self, u: Utterance) -> tuple[str, int, int]:
        import soundfile

        from vpeval.audio import read_audio, write_audio
        from vpeval.content_cache import identity_digest
        from vpeval.data.fingerprint import file_hash

        target = self.folder / f"{_folder_name(u.id)}-{identity_digest(file_hash(u.path), u.channel)[:16]}.wav"
        if target.is_file():
            try:
                info = soundfile.info(str(target))
                return str(target), info.samplerate, info.frames
            except RuntimeError:  # damaged by a killed writer: convert again
                pass
        audio, rate = read_audio(u.path, sample_rate=self.anonymizer.sample_rate, channel=u.channel)
        key = u.id if self.level == "utterance" else u.speaker
        voice = Voice(key, self.level, self.context.rng("stage2-voice", self.system, key), u)
        converted = np.asarray(self.anonymizer.anonymize(audio, rate, voice), dtype=np.float32)
        write_audio(target, converted, rate)  # atomic: another attacker never reads half a file
        return str(target), rate, converted.size


def _converted_here(corpus: Corpus, params: DastParams, context: PluginContext) -> list[Utterance]:
    out: list[Utterance] = []
    for system in params.stage2_anonymizers:
        anonymizer = context.get("anonymizer", system.use, system.params)
        if "waveform" not in anonymizer.works_on:
            raise PluginError(
                f"stage2_anonymizers: {system.use} works on speaker embeddings only; name a waveform anonymizer."
            )
        anonymizer.prepare()
        folder = _conversion_folder(system, anonymizer, params, context)
        convert = _Conversion(anonymizer, folder, system.name, params.stage2_level, context)
        results = context.map(convert, corpus.utterances, description=f"stage II: convert with {system.name}")
        for u, (path, rate, size) in zip(corpus.utterances, results):
            out.append(
                u.replace(id=f"{system.name}/{u.id}", path=path, sample_rate=rate, duration=size / rate, channel=None)
            )
    return out
