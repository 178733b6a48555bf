"""Reference and hypothesis tokens as the VoicePrivacy 2026 toolkit scores Track 2's Whisper transcripts.

The rules (toolkit Voice-Privacy-Challenge-2026, evaluation/utility/asr/whisper_asr/inference.py at e6810a4;
the punctuation rule came with commit c4141d9), re-expressed here:

- A text holding any CJK unified ideograph (U+4E00 to U+9FFF) keeps only those characters (pinyin, Latin
  words, digits and punctuation go) and is scored per character: CER for Chinese.
- Any other text is stripped, lowercased, loses the characters of PUNCTUATION, has its whitespace
  collapsed, and is scored per word.
- An empty reference still counts its hypothesis' tokens as insertions (over zero reference tokens).

The error rate is the total edit distance over the total reference tokens, in percent (SpeechBrain's
ErrorRateStats, which the toolkit calls, sums the same numbers).
"""

from __future__ import annotations

import re

from rapidfuzz.distance import Levenshtein

# The toolkit's _NON_WORD_PUNCT character class, character for character (its "" are two ASCII quotes).
PUNCTUATION = re.compile(r'[.,!?;:»«""()\[\]…—–\-]')
CJK = re.compile(r"[\u4e00-\u9fff]+")
# Whisper's language code for each language prefix of the toolkit's set names (en_dev, cn_test, ja_dev, ...):
# the toolkit reads it from the audio path's folders, "cn" standing for Chinese ("zh").
SET_LANGUAGES = {"en": "en", "de": "de", "fr": "fr", "es": "es", "zh": "zh", "cn": "zh", "ja": "ja"}


def is_chinese(text: str) -> bool:
    return CJK.search(text) is not None


def words_text(text: str) -> str:
    """Lowercase, the toolkit's punctuation removed, single spaces."""
    return " ".join(PUNCTUATION.sub("", text.strip().lower()).split())


def tokens(text: str) -> list[str]:
    """The tokens the toolkit scores: CJK characters of a Chinese text, else the normalised words."""
    chinese = CJK.findall(text)
    if chinese:
        return list("".join(chinese))
    normalised = words_text(text)
    return normalised.split(" ") if normalised else []


def plain_tokens(text: str) -> list[str]:
    """VPC 2024's plain_text_key (evaluation/utility/asr/speechbrain_asr/inference.py, 400de3a): the text as
    written, stripped and split at single spaces (no case folding, punctuation kept; two spaces make an empty
    token, an empty text one empty token, which errors() counts as no reference word, as SpeechBrain does)."""
    return text.strip().split(" ")


def errors(reference: str, hypothesis: str, rules: str = "vpc2026") -> tuple[int, int]:
    """(edit distance, reference tokens) of one utterance under the toolkit's tokens (rules: vpc2026 or vpc2024)."""
    split = plain_tokens if rules == "vpc2024" else tokens
    ref, hyp = split(reference), split(hypothesis)
    # SpeechBrain's ErrorRateStats (the toolkits' scorer, 1.1.2 here) counts a reference whose first token is ""
    # as no tokens, its edits still counted: VPC 2024's empty reference (a `text` line with the id alone).
    return Levenshtein.distance(ref, hyp), 0 if not ref or ref[0] == "" else len(ref)


def set_language(name: str) -> str | None:
    """Whisper's language for a toolkit set name (en_dev -> en, cn_test -> zh), or None when it names none."""
    prefix = name.lower().split("_", 1)[0]
    return SET_LANGUAGES.get(prefix)
