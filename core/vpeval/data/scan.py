"""The experiment's `on_bad_audio` choice: fail on the first unusable file, or skip and list them.

Every file is read whole (blockwise) once and passes the audio gate (`vpeval.audio_gate.audio_problem`):
NaN/infinite samples, utterances shorter than `MIN_SECONDS`, silence or a constant (DC) level, samples
beyond full scale and unreadable data are all "bad audio". The measures are kept in the fingerprint index under
the file's content hash, so a later run of an unchanged corpus only stats its files.

Problems with the labels rather than the audio are refused whatever `on_bad_audio` says: ids or
speakers that are empty or hold whitespace, and a sample rate that contradicts the file's header.
"""

from __future__ import annotations

import os
from collections import Counter

from vpeval.audio import measure_audio, require_audio_file
from vpeval.audio_gate import audio_problem
from vpeval.data.fingerprint import FileIndex, checking_threads, corpus_fingerprint, hash_ahead, thread_results
from vpeval.errors import BadAudioError, DataError
from vpeval.types import Corpus, Utterance

ON_BAD_AUDIO = ("fail", "skip")
# Bump when measure_audio changes what it measures: older stored measures are then ignored.
MEASURES_VERSION = 2  # 2: the mean (a constant DC level is not speech)


def scan_corpus(
    corpus: Corpus, on_bad_audio: str = "fail", fingerprint_cache: str | os.PathLike | None = None
) -> tuple[Corpus, list[tuple[str, str, str]]]:
    """Check every file; return the usable corpus and (id, path, reason) of the skipped ones.

    "fail" raises the first BadAudioError; "skip" drops those utterances. Sample rates and durations
    missing from the labels are filled in from the headers. With `fingerprint_cache` the measures are
    remembered there; when anything is skipped the returned corpus's fingerprint is recomputed with
    it, or cleared ("") without one. A corpus without a fingerprint gets it here (with
    `fingerprint_cache`), of the corpus as declared: scanning first and fingerprinting after reads each
    file from disk once, where fingerprinting first read the whole corpus twice (to hash, then to decode).
    """
    if on_bad_audio not in ON_BAD_AUDIO:
        raise ValueError(f"on_bad_audio must be one of {ON_BAD_AUDIO}, not {on_bad_audio!r}")
    check_labels(corpus)
    kept = []
    declared = []  # the kept utterances as listed: the fingerprint covers what was declared, not filled in
    skipped: list[tuple[str, str, str]] = []
    index = FileIndex(fingerprint_cache) if fingerprint_cache is not None else None
    try:
        ahead = _measured_ahead(corpus.utterances, index)
        for u in corpus.utterances:
            try:
                measures = _measures(u, index, ahead)
                problem = audio_problem(measures)
                if problem:
                    raise BadAudioError(u.path, problem)
            except BadAudioError as exc:
                if on_bad_audio == "fail":
                    raise
                skipped.append((u.id, u.path, exc.reason))
                continue
            rate = measures["sample_rate"]
            if u.sample_rate is not None and u.sample_rate != rate:
                raise DataError(
                    f"{_where(corpus, u)} gives sample_rate {u.sample_rate}, but the header of {u.path} says "
                    f"{rate} Hz; correct the sample rate or leave it empty."
                )
            declared.append(u)
            if u.sample_rate is None or u.duration is None:
                duration = u.duration if u.duration is not None else measures["frames"] / rate
                u = u.replace(sample_rate=rate, duration=duration)
            kept.append(u)
    finally:
        if index is not None:
            index.close()
    if skipped and not kept:  # said here: "no utterances" later would not say why
        reasons = "; ".join(f"{n} {why}" for why, n in sorted(Counter(s[2] for s in skipped).items()))
        raise DataError(
            f"Corpus {corpus.name}: all {len(skipped)} utterances were skipped as bad audio (on_bad_audio: skip): "
            f"{reasons} (first: {skipped[0][1]}); fix or replace the files."
        )
    out = Corpus(corpus.name, kept, dict(corpus.speaker_gender), corpus.fingerprint, dict(corpus.info))
    if not skipped and not corpus.fingerprint and fingerprint_cache is not None:
        # Fingerprinted here, after the scan: each file was hashed (into the index) just before it was
        # decoded, so it was read from disk once; the fingerprint now only stats the files.
        out.fingerprint = corpus_fingerprint(corpus, fingerprint_cache)
    if skipped:
        out.info["skipped_audio"] = [list(s) for s in skipped]
        # The content changed: refingerprint when an index makes it cheap, else leave it to the caller.
        out.fingerprint = (
            corpus_fingerprint(Corpus(corpus.name, declared), fingerprint_cache)
            if fingerprint_cache is not None
            else ""
        )
    return out, skipped


def check_labels(corpus: Corpus) -> None:
    """Refuse ids and speakers that Kaldi files and result tables cannot hold (empty, with whitespace).

    Every corpus source passes through here, so a plugin's corpus is checked as a manifest is, before
    any computation rather than when the results are written.
    """
    for u in corpus.utterances:
        for label, value in (("utterance id", u.id), ("speaker", u.speaker)):
            if not isinstance(value, str) or not value or any(c.isspace() for c in value):
                raise DataError(
                    f"{_where(corpus, u)} has the {label} {value!r}, which is empty or holds whitespace; "
                    "use ids without spaces (Kaldi files and score files separate fields by whitespace)."
                )


def _measured_ahead(utterances: list[Utterance], index: FileIndex | None) -> dict[tuple, dict]:
    """(path, channel) -> measures of the regular files still to measure, on the run's threads when it has
    several (fingerprint.checking_threads); a file that fails is left to the in-order pass, which names it."""
    if checking_threads() < 2:
        return {}
    todo = [u for u in utterances if os.path.isfile(u.path)]  # never a FIFO: the in-order pass refuses it
    if index is not None:
        hash_ahead(u.path for u in todo if not index.knows(u.path))
        todo = [u for u in todo if index.stored_check(index.file_hash(u.path), _channel(u), MEASURES_VERSION) is None]
    measured = thread_results(lambda u: measure_audio(u.path, u.channel), todo)
    return {(u.path, u.channel): m for u, m in zip(todo, measured) if isinstance(m, dict)}


def _channel(u: Utterance) -> int:
    return -1 if u.channel is None else int(u.channel)


def _measures(u: Utterance, index: FileIndex | None, ahead: dict[tuple, dict]) -> dict:
    measured = ahead.pop((u.path, u.channel), None)

    def measure() -> dict:
        return measured if measured is not None else measure_audio(u.path, u.channel)

    if index is None:
        return measure()
    require_audio_file(u.path)  # the index hashes the file before it is measured: a FIFO would hang there
    return index.audio_check(index.file_hash(u.path), u.channel, MEASURES_VERSION, measure)


def _where(corpus: Corpus, u: Utterance) -> str:
    """Where an utterance was listed: 'Manifest m.csv line 7' when the source recorded it."""
    origin = corpus.info.get("origin", {}).get(u.id) if isinstance(corpus.info.get("origin"), dict) else None
    return origin or f"Corpus {corpus.name} (utterance {u.id!r})"
