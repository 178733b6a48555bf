"""The anonymizer contract suite for asr-tts (Whisper tiny.en and espeak-ng, both from pip packages)."""

from vpeval.testing.contracts import AnonymizerContract


class TestAsrTtsContract(AnonymizerContract):
    plugin_name = "asr-tts"
    params = {}


class TestAsrTtsFixedContract(AnonymizerContract):
    plugin_name = "asr-tts"
    params = {"gender": "f", "rate_wpm": [160, 160], "match_duration": False}
