"""The core's encoder contract suite for campplus and eres2net, on tiny published-layout checkpoints."""

from __future__ import annotations

import tempfile
from pathlib import Path

from threedspeaker_testing import tiny_params, write_checkpoint

from vpeval.testing import EncoderContract


class _FolderContract(EncoderContract):
    architecture = ""
    _folder: Path | None = None

    def _source(self) -> Path:
        cls = type(self)
        if cls._folder is None:
            cls._folder = write_checkpoint(
                Path(tempfile.mkdtemp(prefix="vpeval-3dspeaker-")), self.architecture, "3dspeaker"
            )
        return cls._folder

    def _encoder(self, tmp_path):
        return self.make(tmp_path, **tiny_params(self.architecture, self._source()))


class TestCampplusEncoder(_FolderContract):
    plugin_name = "campplus"
    architecture = "campplus"
    params = {"source": "/models/speech_campplus_sv_en_voxceleb_16k"}


class TestERes2NetEncoder(_FolderContract):
    plugin_name = "eres2net"
    architecture = "eres2net"
    params = {"source": "/models/speech_eres2net_sv_en_voxceleb_16k", "num_blocks": [3, 4, 6, 3]}
