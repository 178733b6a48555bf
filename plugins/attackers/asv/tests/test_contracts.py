"""The core's contract suites for the ecapa/xvector attackers and encoders, at CPU-test size."""

from __future__ import annotations

import tempfile
from pathlib import Path

from vpeval.api import PluginContext
from vpeval.testing import AttackerContract, EncoderContract
from vpeval_asv.params import CPU_TEST_SIZE

TINY_ECAPA = {**CPU_TEST_SIZE, "validation_share": 0.5}
TINY_XVECTOR = TINY_ECAPA


class TestEcapaAttacker(AttackerContract):
    plugin_name = "ecapa"
    params = TINY_ECAPA


class TestXvectorAttacker(AttackerContract):
    plugin_name = "xvector"
    params = TINY_XVECTOR


class _CheckpointEncoderContract(EncoderContract):
    """Encoders need a checkpoint: an untrained tiny network saved the way the attacker saves one."""

    architecture = ""
    _folder: Path | None = None

    def _checkpoint(self) -> Path:
        cls = type(self)
        if cls._folder is None:
            from vpeval.plugins import get_plugin_manager

            attacker_cls = get_plugin_manager().get("attacker", self.architecture)
            attacker = attacker_cls(attacker_cls.Params(**TINY_ECAPA), PluginContext(seed=3))
            attacker._embedder = attacker._fresh_embedder()
            cls._folder = Path(tempfile.mkdtemp(prefix=f"vpeval-{self.architecture}-"))
            attacker.save(cls._folder)
        return cls._folder

    def _encoder(self, tmp_path):
        return self.make(tmp_path, checkpoint=str(self._checkpoint()))


class TestEcapaEncoder(_CheckpointEncoderContract):
    plugin_name = "ecapa"
    architecture = "ecapa"


class TestXvectorEncoder(_CheckpointEncoderContract):
    plugin_name = "xvector"
    architecture = "xvector"
