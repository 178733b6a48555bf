"""Word error rate of an ASR on original and anonymized evaluation speech (VoicePrivacy utility metric)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params, PluginRef
from vpeval.content_cache import JsonCache, cache_key
from vpeval.data.fingerprint import file_hash
from vpeval.errors import MetricInputError
from vpeval.stats import percentile_interval, speaker_weights
from vpeval.types import Corpus, MetricResult, Utterance
from vpeval_speech import vpc_text
from vpeval_speech.normalize import normalize_text

NORMALISERS = {
    "vpeval": "vpeval_speech.normalize.normalize_text (NFKC, lowercase, numbers to words, no punctuation)",
    "vpc2026": "VPC 2026 Track 2 (vpeval_speech.vpc_text): lowercase, the toolkit's punctuation removed, words; "
    "Chinese per character (CER)",
    "vpc2024": "VPC 2024's evaluate_asr (vpeval_speech.vpc_text.plain_tokens): the texts as written, split at "
    "single spaces",
}


class WER(Metric):
    """Word error rate (%) of an ASR plugin on original and anonymized speech against the reference text."""

    name = "wer"
    needs = "speech"

    class Params(Params):
        asr: Annotated[str, PluginRef("asr", params="asr_params")] = Field(
            "whisper", description="Name of the ASR plugin that transcribes the speech."
        )
        asr_params: dict[str, Any] = Field(
            default_factory=dict, description="Parameters of that ASR plugin (for whisper: model_path, ...)."
        )
        max_utterances: int | None = Field(
            None,
            ge=1,
            le=10_000_000,
            description="Transcribe at most this many utterances: the same seeded sample of utterance ids for "
            "original and anonymized speech, round-robin over speakers (None: all). ASR is the slow part.",
        )
        bootstrap: int = Field(
            1000,
            ge=0,
            le=100_000,
            description="Speaker-level bootstrap replicates for the confidence interval; 0 disables it.",
        )
        confidence: float = Field(0.95, gt=0.0, lt=1.0, description="Coverage of the percentile confidence interval.")
        normaliser: Literal["vpeval", "vpc2026", "vpc2024"] = Field(
            "vpeval",
            description="How texts become tokens: vpeval (numbers to words, see vpeval_speech.normalize), vpc2026 "
            "(the VoicePrivacy 2026 toolkit's Track 2 rules: lowercase, its punctuation removed, words; a text "
            "with Chinese characters scored per character, CER; empty references count insertions) or vpc2024 "
            "(VoicePrivacy 2024's evaluate_asr: the reference and the ASR's text as written, split at spaces). A "
            "`text` line with the utterance id alone is scored by vpc2024 / vpc2026 as the toolkits score it (no "
            "reference word, the hypothesis' words as edits), skipped by vpeval (skipped_empty_reference).",
        )
        sets: list[str] = Field(
            default_factory=list,
            description="Kaldi data folders (the toolkit's data/en_dev, data/cn_test, ...): one row per folder "
            "over the utterances its `text` lists, named by the folder (details.dataset), as the toolkit's "
            "per-set WER; empty: the pooled rows only.",
        )
        language_from_set: bool = Field(
            True,
            description="With `sets`: transcribe each set in the language its name starts with (en_, de_, fr_, "
            "es_, ja_, cn_ or zh_ -> Whisper's code), as the toolkit reads it from the audio path; for an ASR "
            "with a `language` parameter.",
        )

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        missing = [folder for folder in params.sets if not (Path(folder).expanduser() / "text").is_file()]
        if not missing:
            return []
        what = f"the wer set {missing[0]} has" if len(missing) == 1 else f"the wer sets {', '.join(missing)} have"
        return [
            f"{what} no `text` file (the references); make it with the challenge's data preparation or drop it "
            "from `sets`."
        ]

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        if inputs.original is None:
            raise MetricInputError(
                "The wer metric needs evaluation speech (MetricInputs.original is empty): run it as a speech metric."
            )
        # A `text` line with the utterance id alone (transcript "") is a reference to the toolkits: their
        # read_kaldi_format keeps it with the value "" and their compute_wer scores it (VPC 2024: one empty
        # token; VPC 2026: no token, the hypothesis' words insertions). vpeval's own normaliser skips it,
        # counted as skipped_empty_reference. Blank lines are no utterance to either (the reader drops them).
        toolkit = self.params.normaliser != "vpeval"
        references = {u.id: u.transcript for u in inputs.original if u.transcript or (toolkit and u.transcript == "")}
        if not references:
            raise MetricInputError(
                f"No utterance of corpus {inputs.original.name} has a transcript, so wer has no reference: add "
                "the transcripts (a Kaldi `text` file or a transcript column) or drop the wer metric."
            )
        references = self.sample(inputs.original, references)
        groups = self.set_groups(references)
        asr = self.asr_for(None)
        asr_label = asr.describe() if hasattr(asr, "describe") else asr.name
        genders = {u.id: u.gender for u in inputs.original}
        results = self.score(asr_label, inputs.original, references, "original", genders, groups)
        if inputs.anonymized is not None:
            results += self.score(asr_label, inputs.anonymized, references, "anonymized", genders, groups)
        return results

    def asr_for(self, language: str | None):
        """The ASR plugin, in this language where one is given (per set, as the toolkit transcribes)."""
        params = dict(self.params.asr_params)
        if language is not None:
            params["language"] = language
        return self.context.get("asr", self.params.asr, params)

    def set_groups(self, references: dict[str, str]) -> list[tuple[str | None, list[str], str | None]]:
        """(set name, utterance ids, language) per `sets` folder; one unnamed group of all without sets."""
        if not self.params.sets:
            return [(None, list(references), None)]
        groups, claimed = [], set()
        for folder in self.params.sets:
            path = Path(folder)
            ids = [uid for uid in _listed_ids(path / "text") if uid in references and uid not in claimed]
            claimed.update(ids)
            language = vpc_text.set_language(path.name) if self.params.language_from_set else None
            groups.append((path.name, ids, language))
        return groups

    def sample(self, corpus: Corpus, references: dict[str, str]) -> dict[str, str]:
        """The references to evaluate: all, or a seeded sample spread evenly over speakers."""
        limit = self.params.max_utterances
        if limit is None or limit >= len(references):
            return references
        rng = self.context.rng("wer-sample")
        by_speaker: dict[str, list[str]] = {}
        for u in corpus:
            if u.id in references:
                by_speaker.setdefault(u.speaker, []).append(u.id)
        queues = [list(rng.permutation(sorted(ids))) for _, ids in sorted(by_speaker.items())]
        chosen: list[str] = []
        while len(chosen) < limit:
            for queue in queues:
                if queue and len(chosen) < limit:
                    chosen.append(queue.pop())
        return {uid: references[uid] for uid in sorted(chosen)}

    def score(
        self,
        asr_label: str,
        corpus: Corpus,
        references: dict[str, str],
        speech: str,
        genders: dict[str, str | None],
        groups: list[tuple[str | None, list[str], str | None]],
    ) -> list[MetricResult]:
        """Pooled WER with a speaker-bootstrap interval, then the same per gender where genders are known,
        then per set (`sets`)."""
        import jiwer

        toolkit = self.params.normaliser != "vpeval"
        refs: list[str] = []
        hyps: list[str] = []
        speakers: list[str] = []
        utterance_genders: list[str | None] = []
        sets: list[str] = []
        no_transcript = empty_reference = 0
        hypotheses, set_of = {}, {}
        for name, ids, language in groups:
            wanted = {uid: references[uid] for uid in ids}
            hypotheses.update(self.transcribe(self.asr_for(language), corpus, wanted, speech, name))
            set_of.update(dict.fromkeys(ids, name or ""))
        for utterance in corpus:
            reference = references.get(utterance.id)
            if reference is None or utterance.id not in set_of:
                if utterance.transcript == "" and not toolkit:  # listed in `text` with no words
                    empty_reference += 1
                elif not utterance.transcript:  # not sampled (or in no set) is not missing
                    no_transcript += 1
                continue
            hypothesis = hypotheses[utterance.id]
            if not toolkit:
                reference, hypothesis = normalize_text(reference), normalize_text(hypothesis)
                if not reference:  # nothing left to count errors against (text was punctuation only)
                    empty_reference += 1
                    continue
            refs.append(reference)
            hyps.append(hypothesis)
            speakers.append(utterance.speaker)
            utterance_genders.append(genders.get(utterance.id) or utterance.gender)
            sets.append(set_of[utterance.id])
        if not refs:
            raise MetricInputError(
                f"No utterance of corpus {corpus.name} ({speech} speech) has a usable transcript for wer: check "
                "that its utterance ids match the original evaluation speech."
            )
        measures = None
        if toolkit:
            counted = [vpc_text.errors(r, h, self.params.normaliser) for r, h in zip(refs, hyps)]
            errors = np.array([e for e, _ in counted], dtype=np.float64)
            words = np.array([w for _, w in counted], dtype=np.float64)
            # kept, as the toolkit keeps them: no words (VPC 2024: one empty token) against the hypothesis'
            scored_empty = sum(1 for r, w in zip(refs, words) if w == 0 or not r.strip())
        else:
            measures = jiwer.process_words(refs, hyps)
            errors, words = utterance_errors(measures)
        common = {
            "speech": speech,
            "asr": asr_label,
            "normaliser": NORMALISERS[self.params.normaliser],
            "skipped_no_transcript": no_transcript,
            "skipped_empty_reference": empty_reference,
        }
        if toolkit:
            common["empty_references_scored"] = scored_empty
        speakers_array, gender_array = np.array(speakers), np.array([g or "" for g in utterance_genders])
        results = [self.result(errors, words, speakers_array, "all", common, measures)]
        for gender in ("f", "m"):
            rows = gender_array == gender
            if rows.any() and not rows.all():
                results.append(self.result(errors[rows], words[rows], speakers_array[rows], gender, common))
        set_array = np.array(sets)
        for name, _, _ in groups:
            rows = set_array == (name or "")
            if name is not None and rows.any():
                # "class" too: the core keeps one original-speech row per metric, gender and class.
                part = {**common, "dataset": name, "class": name}
                results.append(self.result(errors[rows], words[rows], speakers_array[rows], "all", part))
        return results

    def result(
        self, errors: np.ndarray, words: np.ndarray, speakers: np.ndarray, gender: str, common: dict, measures=None
    ) -> MetricResult:
        """WER (%) of these utterances: all their errors over all their reference words."""
        low, high = None, None
        if self.params.bootstrap:
            rng = self.context.rng("wer-bootstrap", common["speech"], gender)
            replicates = [
                100.0 * (w @ errors) / (w @ words) if w @ words > 0 else np.nan
                for w in speaker_weights(speakers, self.params.bootstrap, rng)
            ]
            low, high = percentile_interval(np.array(replicates), self.params.confidence)
        details = {
            **common,
            "utterances": int(len(words)),
            "speakers": int(len(set(speakers.tolist()))),
            "reference_words": int(words.sum()),
        }
        if measures is not None:
            details |= {
                "substitutions": measures.substitutions,
                "deletions": measures.deletions,
                "insertions": measures.insertions,
            }
        if low is not None:
            details["bootstrap"] = {
                "replicates": self.params.bootstrap,
                "confidence": self.params.confidence,
                "unit": "speaker",
            }
        return MetricResult(
            metric=self.name,
            value=100.0 * float(errors.sum() / words.sum()) if words.sum() > 0 else float("nan"),
            gender=gender,
            ci_low=low,
            ci_high=high,
            unit="%",
            details=details,
        )

    def transcribe(
        self, asr, corpus: Corpus, references: dict[str, str], speech: str, set_name: str | None = None
    ) -> dict[str, str]:
        """Hypothesis text per utterance that has a reference, from the cache or the ASR.

        Also writes them as a Kaldi-style `hyp_<speech>.txt` (`hyp_<speech>_<set>.txt` per set; utt-id text)
        in the work folder.
        """
        cache = JsonCache(self.context.folder("transcripts"))
        label = asr.describe() if hasattr(asr, "describe") else ""
        identity = {"asr": asr.name, "model": label, "params": asr.params.model_dump(mode="json")}
        if hasattr(asr, "read"):  # an ASR that reads files itself (as its toolkit does) keys on how it reads
            identity["reading"] = asr.reading
        settings = json.dumps({**identity, "seed": self.context.seed}, sort_keys=True)
        wanted: list[Utterance] = [u for u in corpus if references.get(u.id) is not None]

        def text_of(utterance: Utterance) -> str:
            key = cache_key(file_hash(utterance.path), utterance.channel, settings)
            entry = cache.get(key)
            if entry is None:
                transcript = asr.transcribe(speech_of(asr, utterance))
                entry = {"text": transcript.text, "words": transcript.words}
                cache.put(key, entry)
            return entry["text"]

        description = f"wer: {speech} speech"
        remote = getattr(self.context.executor, "remote", False)
        on_cpu_here = getattr(asr, "transcribes_many_on_cpu", False) and not remote
        if hasattr(asr, "transcribe_many") and (self.context.on_gpu or on_cpu_here):
            # A torch ASR on a GPU transcribes the uncached utterances in batches in this process; one that
            # says so (speechbrain-asr) does on the CPU too, spreading each chunk over the run's workers as
            # threads, unless a cluster executor has workers of its own.
            keys = {u.id: cache_key(file_hash(u.path), u.channel, settings) for u in wanted}
            texts = {u.id: entry["text"] for u in wanted if (entry := cache.get(keys[u.id])) is not None}
            todo = [u for u in wanted if u.id not in texts]
            step = 64  # utterances loaded at once: the ASR pads them into its own batches
            starts = range(0, len(todo), step)
            for start in self.context.progress(starts, total=len(starts), description=description):
                chunk = todo[start : start + step]
                for u, transcript in zip(chunk, asr.transcribe_many([speech_of(asr, u) for u in chunk])):
                    cache.put(keys[u.id], {"text": transcript.text, "words": transcript.words})
                    texts[u.id] = transcript.text
            texts = {u.id: texts[u.id] for u in wanted}
        elif remote:
            # A cluster executor: each worker unpickles the ASR once and loads its own model (the ASR
            # leaves a loaded model behind when pickled); the cache folder is shared, so workers write it.
            texts = dict(zip((u.id for u in wanted), self.context.map(text_of, wanted, description)))
        else:
            # An ASR that says it may be called from several threads at once (whisper: one model replica
            # per run worker) transcribes that many utterances in parallel; the texts do not depend on it.
            with ThreadPoolExecutor(max_workers=max(1, getattr(asr, "concurrency", 1))) as pool:
                done = self.context.progress(pool.map(text_of, wanted), total=len(wanted), description=description)
                texts = {u.id: text for u, text in zip(wanted, done)}
        lines = "".join(f"{uid} {' '.join(text.split())}\n" for uid, text in texts.items())
        suffix = f"_{set_name}" if set_name else ""
        (self.context.folder() / f"hyp_{speech}{suffix}.txt").write_text(lines)
        return texts


def speech_of(asr, utterance: Utterance) -> np.ndarray:
    """The samples the ASR transcribes: read by the ASR itself where it reads as its toolkit does, else at its
    rate by vpeval's reader."""
    return asr.read(utterance) if hasattr(asr, "read") else utterance.load(asr.sample_rate)


def utterance_errors(measures) -> tuple[np.ndarray, np.ndarray]:
    """(substitutions + deletions + insertions, reference words) per utterance, from jiwer's alignments."""
    errors, words = [], []
    for chunks in measures.alignments:
        count = length = 0
        for chunk in chunks:
            ref_span = chunk.ref_end_idx - chunk.ref_start_idx
            length += ref_span
            if chunk.type in ("substitute", "delete"):
                count += ref_span
            elif chunk.type == "insert":
                count += chunk.hyp_end_idx - chunk.hyp_start_idx
        errors.append(count)
        words.append(length)
    return np.array(errors, dtype=np.float64), np.array(words, dtype=np.float64)


def _listed_ids(text_file: Path) -> list[str]:
    """Utterance ids of a Kaldi `text` file, in its order (the first field of each non-empty line)."""
    if not text_file.is_file():
        raise MetricInputError(
            f"The wer parameter `sets` names {text_file.parent}, which has no `text` file: give the toolkit's "
            "data folders (data/en_dev, ...) that hold the references."
        )
    return [line.split(maxsplit=1)[0] for line in text_file.read_text(encoding="utf-8").splitlines() if line.strip()]
