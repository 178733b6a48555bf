"""The experiment's `on_bad_audio` choice: fail on the first unusable file, or skip and list them."""

from __future__ import annotations

import os

from vpeval.data.audio import check_audio
from vpeval.data.fingerprint import corpus_fingerprint
from vpeval.errors import BadAudioError
from vpeval.types import Corpus

ON_BAD_AUDIO = ("fail", "skip")


def scan_corpus(
    corpus: Corpus, on_bad_audio: str = "fail", fingerprint_cache: str | os.PathLike | None = None
) -> tuple[Corpus, list[tuple[str, str, str]]]:
    """Check every file's header and last frame; return the usable corpus and (id, path, reason) skipped.

    "fail" raises the first BadAudioError; "skip" drops those utterances. Sample rates and durations
    missing from the labels are filled in from the headers. When anything is skipped the returned
    corpus's fingerprint is recomputed with `fingerprint_cache`, or cleared ("") without one.
    """
    if on_bad_audio not in ON_BAD_AUDIO:
        raise ValueError(f"on_bad_audio must be one of {ON_BAD_AUDIO}, not {on_bad_audio!r}")
    kept = []
    skipped: list[tuple[str, str, str]] = []
    for u in corpus.utterances:
        try:
            frames, rate = check_audio(u.path)
        except BadAudioError as exc:
            if on_bad_audio == "fail":
                raise
            skipped.append((u.id, u.path, exc.reason))
            continue
        if u.sample_rate is None or u.duration is None:
            duration = u.duration if u.duration is not None else frames / rate
            u = u.replace(sample_rate=u.sample_rate or rate, duration=duration)
        kept.append(u)
    out = Corpus(corpus.name, kept, dict(corpus.speaker_gender), corpus.fingerprint, dict(corpus.info))
    if skipped:
        out.info["skipped_audio"] = [list(s) for s in skipped]
        # The content changed: refingerprint when an index makes it cheap, else leave it to the caller.
        out.fingerprint = corpus_fingerprint(out, fingerprint_cache) if fingerprint_cache is not None else ""
    return out, skipped
