"""Anonymizing one utterance as a picklable task, so any executor (forked workers or a cluster) can run it.

The task carries only what rebuilds the anonymizer chain: the resolved plugins (name, validated params,
version, code hash), the seed, the thread count and the cache folder. In the run's own process (and in
forked workers) the run hands over its prepared instances (`remember`); a cluster worker builds and
prepares the chain once per worker process from the installed plugins, with the same work folders,
so its output is the same file, byte for byte.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vpeval.api import Anonymizer, Plugin, PluginContext, Voice
from vpeval.atomic import atomic_file
from vpeval.audio_gate import gate_output, require_mono
from vpeval.build import build_helper, build_resolved
from vpeval.config import ResolvedAnonymizer, ResolvedPlugin
from vpeval.errors import BadAudioError, PluginError
from vpeval.keys import keyed_rng
from vpeval.names import utterance_file
from vpeval.run.cache import stable_key
from vpeval.types import Utterance

# Prepared chains of this process, by task identity: seeded by the run, filled on demand in cluster workers.
_PREPARED: dict[str, list[Anonymizer]] = {}
_BUILDING = threading.Lock()  # a worker with several threads prepares each chain once


def voice_rng(seed: int, step: int, key: str) -> np.random.Generator:
    """The pseudo-speaker generator of chain step `step` for voice key `key` (utterance or speaker id)."""
    return keyed_rng(seed, "voice", step, key)


def file_rate(path: str) -> int:
    import soundfile as sf

    return int(sf.info(path).samplerate)


def plugin_work_dir(cache_root: Path, kind: str, use: str, identity: Any) -> Path:
    """Where a plugin instance keeps its files: the same folder in the run's process and on every worker."""
    return Path(cache_root) / "work" / f"{kind}-{use}" / stable_key(identity)[:16]


def linked(stored: str | None, audio: np.ndarray, rate: int, target: Path) -> bool:
    """Hard-link a submission's mono WAV `stored` as `target` where it decodes to exactly `audio` at `rate` (what the
    written copy holds): for a throwaway cache only, so no kept entry changes when the user rewrites the file."""
    import soundfile as sf

    from vpeval.audio import read_audio

    try:
        info = sf.info(stored) if stored else None
        if not info or info.format not in ("WAV", "WAVEX") or info.channels != 1 or info.samplerate != rate:
            return False
        same = np.array_equal(read_audio(stored)[0], audio)  # decoded once: a run's reads are remembered
        return same and os.link(stored, target) is None
    except (OSError, RuntimeError, ValueError, BadAudioError):  # another filesystem, unreadable: written as before
        return False


@dataclass(frozen=True)
class AnonymizeTask:
    """Anonymize one utterance with the chain `anon` and write it atomically into `partial`."""

    anon: ResolvedAnonymizer
    seed: int
    threads: int
    cache_root: Path
    partial: Path
    options: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"  # the run's resolved device and precision (vpeval.device), for torch anonymizers
    precision: str = "fp32"
    link_stored: bool = False  # a throwaway cache (--no-cache): a stored file may stand as its own copy

    @property
    def identity(self) -> str:
        return stable_key(
            [self.anon.identity(), self.seed, str(self.cache_root), self.threads, self.device, self.precision]
        )

    def remember(self, steps: list[Anonymizer]) -> None:
        """Use these prepared instances in this process and in processes forked from it."""
        _PREPARED[self.identity] = steps

    def forget(self) -> None:
        _PREPARED.pop(self.identity, None)

    def __call__(self, utt: Utterance) -> str:
        from vpeval import audio as audio_io

        steps = self._steps()
        rate = steps[0].sample_rate or utt.sample_rate or file_rate(utt.path)
        audio = utt.load(rate)
        require_mono(audio, utt)
        for index, step in enumerate(steps):
            if step.sample_rate and step.sample_rate != rate:
                audio, rate = audio_io.resample(audio, rate, step.sample_rate), step.sample_rate
            voice_key = utt.id if self.anon.level == "utterance" else utt.speaker
            voice = Voice(voice_key, self.anon.level, voice_rng(self.seed, index, voice_key), utt)
            seconds = len(audio) / rate
            audio, rate = step.anonymize(audio, rate, voice), step.output_rate(rate, voice)
            audio = gate_output(audio, rate, seconds, step, utt)  # what the next step, or the file, gets
        target = self.partial / utterance_file(utt.id)
        if not (self.link_stored and len(steps) == 1 and linked(steps[0].stored_file(utt), audio, rate, target)):
            with atomic_file(target) as tmp:
                audio_io.write_audio(tmp, audio, rate, steps[-1].output_subtype)
        return utt.id

    # -- building the chain in a worker that did not fork from the run ------------------------------

    def _steps(self) -> list[Anonymizer]:
        steps = _PREPARED.get(self.identity)
        if steps is not None:
            return steps
        with _BUILDING:
            if self.identity not in _PREPARED:
                built = [self._build(step) for step in self.anon.steps]
                for step in built:
                    step.prepare()
                _PREPARED[self.identity] = built
            return _PREPARED[self.identity]

    def _build(self, resolved: ResolvedPlugin) -> Anonymizer:
        from vpeval.codehash import code_fingerprint
        from vpeval.plugins import get_plugin_manager

        cls = get_plugin_manager().get(resolved.kind, resolved.use)
        here = (cls.distribution, cls.version, code_fingerprint(cls))
        wanted = (resolved.distribution, resolved.version, resolved.code)
        if here != wanted:
            raise PluginError(
                f"this worker has {resolved.kind} {resolved.use} from {' '.join(here)}, and the run uses "
                f"{' '.join(wanted)}; install the same plugin version and code on every worker."
            )
        context = self._context(plugin_work_dir(self.cache_root, "anonymizer", resolved.use, resolved.identity()))
        return build_resolved(get_plugin_manager(), resolved, context)  # type: ignore[return-value]

    def _context(self, work_dir: Path) -> PluginContext:
        return PluginContext(
            seed=self.seed,
            work_dir=work_dir,
            threads=self.threads,
            workers=1,
            log=logging.getLogger("vpeval.worker"),
            plugin_factory=self._helper,
            options=self.options,
            device=self.device,
            precision=self.precision,
        )

    def _helper(self, kind: str, name: str, params: dict | None) -> Plugin:
        """Helper plugins (encoders, ASR) made as the run's process makes them (Runner._make_helper)."""
        from vpeval.plugins import get_plugin_manager

        cls = get_plugin_manager().get(kind, name)

        def context(validated) -> PluginContext:
            identity = {"kind": kind, "use": name, "params": validated.model_dump(mode="json"), "version": cls.version}
            return self._context(Path(self.cache_root) / "work" / f"{kind}-{name}" / stable_key(identity)[:16])

        return build_helper(cls, params, context)
