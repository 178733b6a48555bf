"""Fuzzing a transformers model folder (issue 38): random bytes, random JSON and cut or overwritten weight
files in the tiny HuBERT folder. Validate and the load each give a working model or one sentence naming a
file of the folder (MissingModelError, exit 2), never a library's traceback."""

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vpeval.errors import MissingModelError
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval_ssl_frontends.tiny import tiny_folder

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=25,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def damages(draw):
    """(file name, how) pairs: each replaces or edits one file of the folder."""
    target = draw(st.sampled_from(["config.json", "model.safetensors", "pytorch_model.bin"]))
    if target == "config.json":
        how = draw(
            st.one_of(
                st.binary(max_size=64).map(lambda b: ("bytes", b)),
                JSON.map(lambda v: ("json", v)),
                st.tuples(st.sampled_from(["hidden_size", "num_hidden_layers", "model_type"]), JSON).map(
                    lambda kv: ("key", kv)
                ),
            )
        )
    else:
        how = draw(
            st.one_of(
                st.binary(max_size=64).map(lambda b: ("bytes", b)),
                st.floats(0.0, 1.0).map(lambda f: ("cut", f)),
                st.tuples(st.floats(0.0, 1.0), st.binary(min_size=1, max_size=16)).map(lambda t: ("overwrite", t)),
            )
        )
    return target, how


def damage(folder, target, how):
    path = folder / target
    kind, value = how
    if kind == "bytes":
        path.write_bytes(value)
    elif kind == "json":
        path.write_text(json.dumps(value))
    elif kind == "key":
        config = json.loads(path.read_text())
        config[value[0]] = value[1]
        path.write_text(json.dumps(config))
    elif kind == "cut" and path.exists():
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * value)])
    elif kind == "overwrite" and path.exists():
        data = bytearray(path.read_bytes())
        at = int(len(data) * value[0])
        data[at : at + len(value[1])] = value[1]
        path.write_bytes(bytes(data))


@pytest.mark.filterwarnings("ignore")
@FUZZ
@given(damages())
def test_a_damaged_folder_loads_or_is_refused_in_one_sentence(tmp_path_factory, one_sentence, change):
    folder = shutil.copytree(tiny_folder("hubert", "group"), tmp_path_factory.mktemp("fuzz") / "hubert")
    target, how = change
    damage(folder, target, how)
    cls = get_plugin_manager().get("frontend", "hubert")
    for problem in cls.missing_paths(cls.Params(model=str(folder))):
        assert one_sentence(problem) and str(folder) in problem, problem
    try:
        loaded = cls(cls.Params(model=str(folder)), plugin_context()).loaded
    except MissingModelError as exc:
        assert exc.exit_code == 2 and one_sentence(str(exc)) and str(folder) in str(exc), str(exc)
    else:
        assert loaded is not None
