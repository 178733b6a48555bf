"""The English text normaliser applied to references and hypotheses before WER.

Steps, in order: Unicode NFKC; lowercase; "%" -> " percent", "&" -> " and "; numbers written with
digits -> words ("21st" -> "twenty first", "21" -> "twenty one", "3.5" -> "three point five",
"1,000" -> "one thousand"); hyphens, slashes and underscores -> spaces; every other character that
is not a letter, an apostrophe inside a word or a space is removed; apostrophes at word edges are
removed; runs of spaces collapse.
It is deliberately small and predictable (no spelling or contraction rewriting, unlike Whisper's
EnglishTextNormalizer), so both sides are treated alike and the rules can be read in one screen.
"""

from __future__ import annotations

import re
import unicodedata

ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen"
).split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"))

NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
IRREGULAR_ORDINALS = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}


def integer_words(n: int) -> str:
    """Cardinal English words of a non-negative integer (short scale)."""
    if n < 20:
        return ONES[n]
    if n < 100:
        tens, rest = divmod(n, 10)
        return TENS[tens] + ("" if rest == 0 else " " + ONES[rest])
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return ONES[hundreds] + " hundred" + ("" if rest == 0 else " " + integer_words(rest))
    for scale, word in SCALES:
        if n >= scale:
            high, rest = divmod(n, scale)
            return integer_words(high) + " " + word + ("" if rest == 0 else " " + integer_words(rest))
    raise AssertionError("unreachable")


def number_words(token: str) -> str:
    """Words of a number written with digits, thousands separators and an optional decimal part."""
    whole, _, fraction = token.replace(",", "").partition(".")
    words = integer_words(int(whole))
    if fraction:
        words += " point " + " ".join(ONES[int(d)] for d in fraction)
    return words


def ordinal_words(n: int) -> str:
    """Ordinal English words of a non-negative integer ("21" -> "twenty first")."""
    *head, last = integer_words(n).split()
    if last in IRREGULAR_ORDINALS:
        last = IRREGULAR_ORDINALS[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return " ".join([*head, last])


def normalize_text(text: str) -> str:
    """Normalised English text for WER (see the module docstring for the exact rules)."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("’", "'").replace("%", " percent ").replace("&", " and ")
    text = ORDINAL.sub(lambda m: " " + ordinal_words(int(m.group(1))) + " ", text)
    text = NUMBER.sub(lambda m: " " + number_words(m.group()) + " ", text)
    text = re.sub(r"[-_/]", " ", text)
    text = re.sub(r"[^\w\s']|\d", " ", text)  # digits left here were not numbers (none expected)
    text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)
    return " ".join(text.split())
