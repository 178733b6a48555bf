"""fit.py and shared.py reach SpInv only through its public interface (no module reads another's private
members), and that interface behaves as training relies on."""

import ast
from pathlib import Path

import numpy as np
import pytest

import vpeval_spinv
from vpeval.api import PluginContext
from vpeval.errors import DataError
from vpeval_spinv.attacker import SpInv
from vpeval_spinv.presets import TINY

PACKAGE = Path(vpeval_spinv.__file__).parent


def _foreign_private_reads(path: Path) -> list[str]:
    """`x._name` where x is not self or cls (dunders allowed)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_no_module_reads_another_objects_private_members():
    assert [hit for p in sorted(PACKAGE.glob("*.py")) for hit in _foreign_private_reads(p)] == []


class _Encoder:
    sample_rate = 16000

    def __init__(self, value):
        self.value = value

    def embed(self, audio):
        return np.full((1, 3), self.value, dtype=np.float64)


def _attacker(tmp_path, encoder):
    context = PluginContext(seed=0, work_dir=tmp_path, plugin_factory=lambda kind, name, params: encoder)
    return SpInv(SpInv.Params(**{**TINY, "target_encoder": {"use": "bands"}}), context)


def test_embed_waveform_gives_a_flat_float32_vector_and_refuses_non_finite_ones(tmp_path):
    vector = _attacker(tmp_path, _Encoder(0.5)).embed_waveform(np.zeros(1600, dtype=np.float32))
    assert vector.dtype == np.float32 and vector.shape == (3,)
    np.testing.assert_array_equal(vector, [0.5, 0.5, 0.5])
    with pytest.raises(DataError, match="bands returned NaN"):
        _attacker(tmp_path, _Encoder(np.nan)).embed_waveform(np.zeros(1600, dtype=np.float32))


def test_frontend_output_is_the_attacked_frontends_and_needs_one(tmp_path):
    attacker = _attacker(tmp_path, _Encoder(0.5))
    with pytest.raises(DataError, match="name one in the experiment"):
        attacker.frontend_output(np.zeros(1600, dtype=np.float32))

    class Frontend:
        sample_rate = 16000

        def encode(self, audio):
            return ("encoded", len(audio))

        def encode_batch(self, audios):
            return [self.encode(audio) for audio in audios]

    attacker.frontend = Frontend()
    assert attacker.attacked_frontend() is attacker.frontend
    assert attacker.frontend_output(np.zeros(1600, dtype=np.float32)) == ("encoded", 1600)
