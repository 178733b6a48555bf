"""Transcripts of the audio actually attacked, from a vpeval asr plugin, cached by the audio's bytes.

The cache key is the file's content digest plus the asr plugin's name and parameters, so anonymized
audio gets its own transcript (seed 000, IV-A: Whisper transcripts of each condition's audio) and a
rerun never transcribes the same audio twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from vpeval.api import PluginContext
from vpeval.content_cache import JsonCache, cache_key
from vpeval.data.fingerprint import file_hash
from vpeval.types import Utterance

ASR_RATE = 16000


@dataclass(frozen=True)
class Words:
    """A transcript and its word timings (word, start s, end s); timings are empty for reference text."""

    text: str
    words: tuple[tuple[str, float, float], ...] = field(default_factory=tuple)


class Transcriber:
    """Transcribes utterances once per distinct audio content (disk cache plus an in-process memo)."""

    def __init__(self, source: str, asr: str, asr_params: dict, context: PluginContext):
        self.source = source
        self.asr_name = asr
        self.asr_params = dict(asr_params)
        self.context = context
        self._asr = None
        self._cache: JsonCache | None = None
        self._memo: dict[tuple, Words] = {}
        self.transcribed = 0  # how many times the asr actually ran (tests and logs read it)

    @property
    def asr(self):
        if self._asr is None:
            self._asr = self.context.get("asr", self.asr_name, self.asr_params)
        return self._asr

    @property
    def cache(self) -> JsonCache:
        """In the asr's own work folder, which the runner keys by the asr's settings alone, so every
        attacker (every system) that reads the same audio through the same asr shares the transcripts."""
        if self._cache is None:
            self._cache = JsonCache(self.asr.context.folder("transcripts"))
        return self._cache

    def settings(self) -> str:
        return json.dumps({"asr": self.asr_name, "params": self.asr_params}, sort_keys=True)

    def get(self, utterance: Utterance) -> Words:
        if self.source == "corpus":
            return Words(utterance.transcript or "")
        stat = os.stat(utterance.path)  # a file rewritten in place is a new memo entry
        memo_key = (utterance.path, utterance.channel, stat.st_size, stat.st_mtime_ns)
        if memo_key in self._memo:
            return self._memo[memo_key]
        key = cache_key(file_hash(utterance.path), utterance.channel, self.settings())
        hit = self.cache.get(key)
        if hit is None:
            transcript = self.asr.transcribe(utterance.load(ASR_RATE))
            self.transcribed += 1
            hit = {"text": transcript.text, "words": [list(w) for w in transcript.words]}
            self.cache.put(key, hit)
        words = Words(hit["text"], tuple((str(w), float(s), float(e)) for w, s, e in hit["words"]))
        self._memo[memo_key] = words
        return words

    def get_many(self, utterances: Sequence[Utterance], description: str = "transcribe") -> list[Words]:
        items = self.context.progress(utterances, total=len(utterances), description=description)
        return [self.get(u) for u in items]
