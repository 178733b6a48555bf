import pytest

from vpeval_speech.normalize import integer_words, normalize_text, ordinal_words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, World!", "hello world"),
        ("  many   spaces\there ", "many spaces here"),
        ("I have 21 cats & 3.5 dogs.", "i have twenty one cats and three point five dogs"),
        ("It cost 1,000,000 dollars", "it cost one million dollars"),
        ("Zero.", "zero"),
        ("0", "zero"),
        ("7.", "seven"),
        ("100% well-known", "one hundred percent well known"),
        ("the 21st and 12th of May", "the twenty first and twelfth of may"),
        ("Don't say 'hello'", "don't say hello"),
        ("It’s fine", "it's fine"),
        ("and/or under_score", "and or under score"),
        ("...", ""),
    ],
)
def test_normalize_text(text, expected):
    assert normalize_text(text) == expected


@pytest.mark.parametrize(
    ("number", "words"),
    [
        (0, "zero"),
        (13, "thirteen"),
        (40, "forty"),
        (99, "ninety nine"),
        (101, "one hundred one"),
        (1995, "one thousand nine hundred ninety five"),
        (2_000_017, "two million seventeen"),
    ],
)
def test_integer_words(number, words):
    assert integer_words(number) == words


def test_ordinal_words():
    assert [ordinal_words(n) for n in (1, 2, 3, 5, 9, 20, 42, 100)] == [
        "first",
        "second",
        "third",
        "fifth",
        "ninth",
        "twentieth",
        "forty second",
        "one hundredth",
    ]
