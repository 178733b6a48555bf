"""The core's frontend contract on tiny random-weight transformers folders of the three models."""

from vpeval.testing import FrontendContract
from vpeval_ssl_frontends.tiny import tiny_folder


class _FolderContract(FrontendContract):
    norm = "layer"

    @property
    def params(self):  # the folder is written on first use, once per process
        return {"model": str(tiny_folder(self.plugin_name, self.norm))}


class TestWavLMContract(_FolderContract):
    plugin_name = "wavlm"


class TestHubertContract(_FolderContract):
    plugin_name = "hubert"
    norm = "group"


class TestWav2Vec2Contract(_FolderContract):
    plugin_name = "wav2vec2"
    norm = "group"
