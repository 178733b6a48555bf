"""The core's frontend contract on tiny random-weight configurations of the four real frontends."""

from vpeval.testing import FrontendContract
from vpeval_slm_frontends.tiny import HIGGS, KIMI_TOKENIZER, KIMI_WHISPER, MIMI, QWEN


class TestMimiContract(FrontendContract):
    plugin_name = "mimi"
    params = {"config": MIMI}


class TestHiggsContract(FrontendContract):
    plugin_name = "higgs"
    params = {"config": HIGGS}


class TestKimiContract(FrontendContract):
    plugin_name = "kimi"
    params = {"config": KIMI_TOKENIZER, "feature_config": KIMI_WHISPER}


class TestQwenContract(FrontendContract):
    plugin_name = "qwen"
    params = {"config": QWEN}
