"""wavlm, hubert, wav2vec2 from tiny transformers folders: transformers' own layers, batching, errors."""

import json

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from vpeval.errors import ConfigError, MissingModelError
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval_ssl_frontends.tiny import tiny_folder, write_folder

VARIANTS = [(kind, norm) for kind in ("wavlm", "hubert", "wav2vec2") for norm in ("layer", "group")]
IDS = [f"{kind}-{'large' if norm == 'layer' else 'base'}" for kind, norm in VARIANTS]
# Batched frames vs one waveform alone: float rounding of other kernel shapes only (measured max ~3e-6
# on these models; every masked path, group norm included, is exact in arithmetic).
BATCH_TOLERANCE = 1e-5


def make(kind: str, model, **params):
    cls = get_plugin_manager().get("frontend", kind)
    return cls(cls.Params(model=str(model), **params), plugin_context())


def transformers_layers(model, audio: np.ndarray) -> np.ndarray:
    """[L+1, T, D]: transformers' own forward with output_hidden_states, after the feature extractor's
    zero-mean unit-variance normalisation (the tiny folders say do_normalize: true)."""
    from transformers import Wav2Vec2FeatureExtractor

    extractor = Wav2Vec2FeatureExtractor(do_normalize=True)
    values = extractor(audio, sampling_rate=16000, return_tensors="pt").input_values
    with torch.no_grad():
        out = model(values, output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0].numpy()


@pytest.mark.parametrize(("kind", "norm"), VARIANTS, ids=IDS)
def test_every_layer_is_transformers_hidden_state(kind, norm, speech):
    ssl = make(kind, tiny_folder(kind, norm), layers=[0, 1, 2, 3])
    for audio in speech[:2]:
        want = transformers_layers(ssl.loaded.model, audio)
        got = ssl.split_layers(ssl.encode(audio).features)
        assert got.shape == want.shape == (4, ssl.loaded.model._get_feat_extract_output_lengths(len(audio)), 32)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)  # numpy vs torch normalisation rounding


@pytest.mark.parametrize(("kind", "norm"), VARIANTS, ids=IDS)
def test_batched_equals_one_at_a_time(kind, norm, speech):
    """Padded, masked batches (group-norm base models included) give each waveform its own frames."""
    ssl = make(kind, tiny_folder(kind, norm), layers=[0, 1, 2, 3], batch_size=4)
    batched = ssl.encode_batch(speech)
    for audio, out in zip(speech, batched):
        alone = ssl.encode(audio)
        assert out.features.shape == alone.features.shape
        assert np.abs(out.features - alone.features).max() <= BATCH_TOLERANCE


def test_group_norm_without_the_mask_would_differ(speech):
    """The masked group norm matters: transformers' plain forward on the padded batch shifts the real frames."""
    ssl = make("wav2vec2", tiny_folder("wav2vec2", "group"), layers=[1], normalize="none")
    model = ssl.loaded.model
    short, long = speech[1], speech[2]
    padded = torch.zeros(2, len(long))
    padded[0, : len(short)] = torch.from_numpy(short)
    padded[1] = torch.from_numpy(long)
    with torch.no_grad():
        plain = model(padded, output_hidden_states=True).hidden_states[1][0, : ssl.encode(short).features.shape[0]]
    assert np.abs(plain.numpy() - ssl.encode(short).features).max() > 1e-3
    np.testing.assert_allclose(ssl.encode_batch([short, long])[0].features, ssl.encode(short).features, atol=1e-5)


def test_frames_are_50_per_second_and_all_is_every_transformer_layer(speech):
    ssl = make("hubert", tiny_folder("hubert", "group"))
    out = ssl.encode(speech[2])
    assert out.frame_rate == ssl.frame_rate == 50.0 and out.tokens is None
    assert ssl.output_layers == [1, 2, 3] and ssl.layer_dim == 32 and ssl.layer_count == 3
    assert make("hubert", tiny_folder("hubert", "group"), combine="mean").layer_count == 1
    assert out.features.shape == (ssl.loaded.model._get_feat_extract_output_lengths(len(speech[2])), 3 * 32)
    assert out.features.dtype == np.float32


def test_mean_and_weighted_sum_are_those_of_the_stack(speech):
    folder = tiny_folder("wavlm", "layer")
    audio = speech[0]
    stack = make("wavlm", folder, layers=[1, -1]).encode(audio).features.reshape(-1, 2, 32)
    mean = make("wavlm", folder, layers=[1, -1], combine="mean").encode(audio).features
    logits = [0.3, -1.2]
    weighted = make("wavlm", folder, layers=[1, -1], combine="weighted-sum", layer_weights=logits).encode(audio)
    weights = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(mean, stack.mean(1), atol=1e-6)
    np.testing.assert_allclose(weighted.features, (stack * weights[None, :, None]).sum(1), atol=1e-6)


def test_final_layer_norm_gives_transformers_last_hidden_state(speech):
    ssl = make("wavlm", tiny_folder("wavlm", "layer"), layers=[3], final_layer_norm=True)
    from transformers import Wav2Vec2FeatureExtractor

    values = Wav2Vec2FeatureExtractor()(speech[0], sampling_rate=16000, return_tensors="pt").input_values
    with torch.no_grad():
        last = ssl.loaded.model(values).last_hidden_state[0].numpy()
    np.testing.assert_allclose(ssl.encode(speech[0]).features, last, atol=1e-5)


def test_normalize_auto_reads_the_preprocessor_config(speech):
    raw_folder = tiny_folder("wav2vec2", "layer", do_normalize=False)
    auto = make("wav2vec2", raw_folder, layers=[1]).encode(speech[0]).features
    none = make("wav2vec2", raw_folder, layers=[1], normalize="none").encode(speech[0]).features
    scaled = make("wav2vec2", raw_folder, layers=[1], normalize="zero-mean-unit-var").encode(speech[0]).features
    np.testing.assert_array_equal(auto, none)
    assert np.abs(auto - scaled).max() > 1e-3


def test_audio_shorter_than_one_frame_gives_one_frame():
    ssl = make("hubert", tiny_folder("hubert", "layer"))
    out = ssl.encode(np.full(100, 0.1, dtype=np.float32))
    assert out.features.shape == (1, 3 * 32) and np.isfinite(out.features).all()


def test_parameters_are_checked(one_sentence):
    cls = get_plugin_manager().get("frontend", "wavlm")
    with pytest.raises(ValidationError):
        cls.Params(model="m", combine="weighted-sum")  # weights missing
    with pytest.raises(ValidationError):
        cls.Params(model="m", layer_weights=[1.0])  # weights without weighted-sum
    with pytest.raises(ValidationError):
        cls.Params(model="m", layers=[1, 1])
    with pytest.raises(ValidationError):
        cls.Params()  # model is required
    with pytest.raises(ConfigError) as err:
        _ = make("wavlm", tiny_folder("wavlm", "layer"), layers=[4]).loaded
    assert one_sentence(str(err.value)) and "layers" in str(err.value)
    with pytest.raises(ConfigError) as err:
        _ = make("wavlm", tiny_folder("wavlm", "layer"), combine="weighted-sum", layer_weights=[1.0, 2.0]).loaded
    assert one_sentence(str(err.value)) and "layer_weights" in str(err.value)


@pytest.mark.parametrize("kind", ["wavlm", "hubert", "wav2vec2"])
def test_a_missing_model_is_one_sentence(kind, tmp_path, one_sentence):
    with pytest.raises(MissingModelError) as err:
        _ = make(kind, tmp_path / "nowhere").loaded
    message = str(err.value)
    assert one_sentence(message) and str(tmp_path / "nowhere") in message and "does not exist" in message


def test_foreign_or_broken_models_are_one_sentence(tmp_path, one_sentence):
    wrong = tiny_folder("hubert", "group")
    with pytest.raises(MissingModelError) as err:
        _ = make("wav2vec2", wrong).loaded
    assert one_sentence(str(err.value)) and "hubert" in str(err.value)
    empty = tmp_path / "no-weights"
    empty.mkdir()
    (empty / "config.json").write_text(json.dumps(json.loads((wrong / "config.json").read_text())))
    with pytest.raises(MissingModelError) as err:
        _ = make("hubert", empty).loaded
    assert one_sentence(str(err.value)), str(err.value)
    garbage = tmp_path / "WavLM-Large.pt"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(MissingModelError) as err:
        _ = make("wavlm", garbage).loaded
    assert str(garbage) in str(err.value) and "Python objects" not in str(err.value)  # broken, not refused
    with pytest.raises(MissingModelError) as err:
        _ = make("hubert", garbage).loaded  # only wavlm reads a UniLM file
    assert one_sentence(str(err.value))


def test_pytorch_model_bin_folders_load(tmp_path, speech):
    """Older folders hold pytorch_model.bin instead of safetensors: the same weights, the same frames."""
    import transformers

    folder = write_folder("hubert", tmp_path / "bin", "group")
    model = transformers.HubertModel.from_pretrained(str(folder))
    (folder / "model.safetensors").unlink()
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    np.testing.assert_array_equal(
        make("hubert", folder).encode(speech[0]).features,
        make("hubert", tiny_folder("hubert", "group")).encode(speech[0]).features,
    )


def test_describe_shows_the_parameters():
    from click.testing import CliRunner

    from vpeval.cli import main

    result = CliRunner().invoke(main, ["describe", "frontend", "wavlm"])
    assert result.exit_code == 0, result.output
    for field in ("model", "layers", "combine", "layer_weights", "normalize", "batch_size", "WavLM-Large.pt"):
        assert field in result.output


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_batches_match_the_cpu(speech):
    """GPU fp32 batches equal the CPU's frames within float tolerance; bf16 within its own."""
    from vpeval.api import PluginContext

    cls = get_plugin_manager().get("frontend", "wavlm")
    params = cls.Params(model=str(tiny_folder("wavlm", "layer")), layers=[0, 3])
    cpu = [o.features for o in cls(params, plugin_context()).encode_batch(speech)]
    for precision, tolerance in (("fp32", 1e-4), ("bf16", 0.1)):
        gpu = cls(params, PluginContext(device="cuda", precision=precision)).encode_batch(speech)
        for a, b in zip(cpu, gpu):
            assert a.shape == b.features.shape and np.abs(a - b.features).max() <= tolerance * max(1, np.abs(a).max())


def test_stopping_after_the_deepest_wanted_layer_changes_no_frame(speech):
    """layers: [0] or [2] stop the encoder early; their frames are those of the full run."""
    from vpeval_ssl_frontends.forward import layer_frames

    ssl = make("wavlm", tiny_folder("wavlm", "group"), layers=[0, 1, 2, 3])
    model = ssl.loaded.model
    waves = torch.from_numpy(speech[0])[None]
    lengths = torch.tensor([len(speech[0])])
    with torch.no_grad():
        full = layer_frames(model, waves, lengths, [0, 1, 2, 3], run_all=True)
        calls = []
        hook = model.encoder.layers[2].register_forward_hook(lambda *_: calls.append(1))
        try:
            early = layer_frames(model, waves, lengths, [2])
            first = layer_frames(model, waves, lengths, [0])
        finally:
            hook.remove()
    assert calls == []  # layer 3 never ran
    torch.testing.assert_close(early[2], full[2], rtol=0, atol=0)
    torch.testing.assert_close(first[0], full[0], rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["wavlm", "hubert", "wav2vec2"])
def test_validate_names_a_missing_model_before_loading(kind, tmp_path, one_sentence):
    cls = get_plugin_manager().get("frontend", kind)
    missing = cls.missing_paths(cls.Params(model=str(tmp_path / "absent")))
    assert len(missing) == 1 and one_sentence(missing[0]) and str(tmp_path / "absent") in missing[0]
    assert cls.missing_paths(cls.Params(model=str(tiny_folder(kind, "group")))) == []
    (tmp_path / "WavLM-Large.pt").write_bytes(b"x")
    file_problem = cls.missing_paths(cls.Params(model=str(tmp_path / "WavLM-Large.pt")))
    assert file_problem == [] if kind == "wavlm" else len(file_problem) == 1
