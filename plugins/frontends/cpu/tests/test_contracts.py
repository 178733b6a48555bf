"""The core's frontend contract with the real packaged parts (Whisper base) and learned codebooks."""

from vpeval.testing import FrontendContract


class TestKimiLikeContract(FrontendContract):
    plugin_name = "kimi-like"
    params = {"codebook_size": 16}
    fits = True


class TestFbankRvqContract(FrontendContract):
    plugin_name = "fbank-rvq"
    params = {"codebook_size": 16}
    fits = True
