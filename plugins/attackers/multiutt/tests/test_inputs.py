"""What the systems read besides filterbanks: transcripts (asr plugin, cached by audio content),
prosody (Praat F0, voicing, CMUdict syllables over word timestamps) and frontend frames."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import soundfile as sf

from vpeval.api import ASR, PluginContext, Transcript
from vpeval.plugins import plugin_context
from vpeval.testing.dummies import speaker_voice, synthesize
from vpeval.types import TrainingData, TrainingStage
from vpeval_multiutt.attacker import MultiUttAttacker
from vpeval_multiutt.params import CPU_TEST_SIZE
from vpeval_multiutt.prosody import side_statistics, syllables, utterance_prosody
from vpeval_multiutt.transcripts import Transcriber, Words


class CountingASR(ASR):
    """Says how long the audio was; counts its calls."""

    name = "counting"
    calls: list[int] = []

    def transcribe(self, audio: np.ndarray) -> Transcript:
        CountingASR.calls.append(len(audio))
        return Transcript(f"samples {len(audio)}", [("hello", 0.1, 0.4), ("banana", 0.5, 1.1)])


def asr_context(tmp_path, asked: list):
    def factory(kind, name, params):
        asked.append((kind, name, params))
        return CountingASR(CountingASR.Params(), PluginContext(work_dir=tmp_path / "asr"))

    return PluginContext(seed=0, work_dir=tmp_path / "work", plugin_factory=factory)


def test_transcripts_come_from_the_asr_plugin_once_per_audio_content(train_corpus, tmp_path):
    CountingASR.calls.clear()
    asked: list = []
    attacker = MultiUttAttacker(
        MultiUttAttacker.Params(**{**CPU_TEST_SIZE, "system": "text", "asr_params": {"beam_size": 1}}),
        asr_context(tmp_path, asked),
    )
    utts = train_corpus.utterances[:3]
    first = attacker.transcriber.get_many(utts)
    assert asked == [("asr", "whisper", {"beam_size": 1})]
    assert [w.text for w in first] == [f"samples {len(u.load(16000))}" for u in utts]
    assert first[0].words == (("hello", 0.1, 0.4), ("banana", 0.5, 1.1))
    assert len(CountingASR.calls) == 3
    assert list((tmp_path / "asr" / "transcripts").rglob("*.json"))
    # Another attacker (fresh memo) whose asr has the same work folder transcribes nothing again.
    again = Transcriber("asr", "whisper", {"beam_size": 1}, asr_context(tmp_path, []))
    assert again.get_many(utts) == first and len(CountingASR.calls) == 3
    # The key is the audio's bytes: a copy under another name is a hit, changed audio is transcribed.
    copy = tmp_path / "copy.wav"
    shutil.copy(utts[0].path, copy)
    assert again.get(utts[0].replace(id="x", path=str(copy))) == first[0] and len(CountingASR.calls) == 3
    audio, rate = sf.read(copy, dtype="float32")
    sf.write(copy, audio[: len(audio) // 2], rate)
    assert again.get(utts[0].replace(id="y", path=str(copy))).text == f"samples {len(audio) // 2}"
    assert len(CountingASR.calls) == 4
    # Other asr settings are another key.
    other = Transcriber("asr", "whisper", {"beam_size": 5}, asr_context(tmp_path, []))
    other.get(utts[1])
    assert len(CountingASR.calls) == 5


def test_reference_transcripts_need_no_asr(train_corpus, tmp_path):
    asked: list = []
    transcriber = Transcriber("corpus", "whisper", {}, asr_context(tmp_path, asked))
    u = train_corpus.utterances[0]
    assert transcriber.get(u) == Words(u.transcript) and asked == []


@pytest.mark.parametrize("word, count", [("banana", 3), ("the", 1), ("Hello,", 2), ("zorblatt", 2), ("", 0)])
def test_syllables_from_cmudict_with_vowel_group_fallback(word, count):
    assert syllables(word) == count


def test_prosody_reads_pitch_voicing_and_speaking_rate():
    voice = speaker_voice(1)
    audio = synthesize(voice, 1.5, 16000, np.random.default_rng(0))
    words = Words("hello banana", (("hello", 0.2, 0.6), ("banana", 0.7, 1.2)))
    f0, rate, voiced = utterance_prosody(audio, 16000, words)
    assert f0 == pytest.approx(voice["f0"], rel=0.15)
    assert voiced > 0.6
    assert rate == pytest.approx(5 / 1.0)  # (2 + 3 syllables) / (1.2 s - 0.2 s)
    silent = utterance_prosody(np.zeros(16000, dtype=np.float32), 16000, Words(""))
    np.testing.assert_array_equal(silent, [0.0, 0.0, 0.0])


def test_prosody_without_timestamps_uses_the_voiced_span():
    audio = np.concatenate(
        [np.zeros(8000), synthesize(speaker_voice(1), 1.0, 16000, np.random.default_rng(1)), np.zeros(8000)]
    )
    _, rate, _ = utterance_prosody(audio.astype(np.float32), 16000, Words("banana banana"))
    assert rate == pytest.approx(6 / 1.0, rel=0.1)


def test_side_statistics_are_mean_and_std_over_utterances():
    x = np.array([[100.0, 4.0, 0.5], [120.0, 6.0, 0.7]])
    np.testing.assert_allclose(side_statistics(x), [110, 5, 0.6, 10, 1, 0.1], rtol=1e-6)


def test_frames_can_come_from_a_frontend_plugin(train_corpus, tmp_path):
    """frame_source names a vpeval frontend: it is fitted, its features feed the ECAPA, it is saved with the model."""
    params = {
        **CPU_TEST_SIZE,
        "system": "frame-concat",
        "frame_source": "fbank-rvq",
        # fbank-rvq's float features (its tokens-only default gives the ECAPA nothing to read)
        "frame_source_params": {
            "num_codebooks": 1,
            "codebook_size": 4,
            "frame_rate": 25.0,
            "expose": "tokens+features",
        },
    }
    corpus = train_corpus.with_speakers(train_corpus.speakers[:4])
    attacker = MultiUttAttacker(MultiUttAttacker.Params(**params), plugin_context(seed=0, work_dir=tmp_path / "a"))
    attacker.train(TrainingData([TrainingStage("original", corpus)]))
    assert attacker.frames.frame_rate == 25.0 and attacker.audio.config.frame_dim == 4 * 80
    attacker.save(tmp_path / "saved")
    restored = MultiUttAttacker(MultiUttAttacker.Params(**params), plugin_context(seed=0, work_dir=tmp_path / "b"))
    restored.load(tmp_path / "saved")
    sides = [corpus.utterances[:2], corpus.utterances[2:3]]
    np.testing.assert_allclose(restored.represent_many(sides), attacker.represent_many(sides), rtol=1e-5, atol=1e-6)


def _tiny_wavlm_folder(folder):
    """A random-weight WavLM transformers folder (WavLM-Large's layout, narrow and shallow): the real
    loading code of the wavlm frontend reads it, as it would read a local WavLM-Large."""
    import json

    import torch
    import transformers

    config = transformers.WavLMConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        conv_dim=[16] * 7,
        num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=4,
        num_buckets=32,
        max_bucket_distance=64,
        feat_extract_norm="layer",
        do_stable_layer_norm=True,
    )
    torch.manual_seed(0)
    transformers.WavLMModel(config).eval().save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(
        json.dumps({"do_normalize": True, "feature_size": 1, "sampling_rate": 16000, "padding_value": 0.0})
    )
    return folder


def test_frames_can_be_wavlm_layers_through_the_wavlm_frontend(train_corpus, tmp_path):
    """The paper's frame frontend (frozen WavLM-Large) a parameter away: frame_source wavlm with a local folder
    and the layer to read; here a tiny random-weight folder (50 frames/s, 32-d)."""
    from vpeval.plugins import get_plugin_manager

    try:
        get_plugin_manager().get("frontend", "wavlm")
    except Exception:
        pytest.skip("the wavlm frontend (vpeval-ssl-frontends) is not installed")
    folder = _tiny_wavlm_folder(tmp_path / "wavlm")
    params = {
        **CPU_TEST_SIZE,
        "system": "frame-concat",
        "epochs": 1,
        "frame_source": "wavlm",
        "frame_source_params": {"model": str(folder), "layers": [2]},
    }
    corpus = train_corpus.with_speakers(train_corpus.speakers[:3])
    attacker = MultiUttAttacker(MultiUttAttacker.Params(**params), plugin_context(seed=0, work_dir=tmp_path / "a"))
    attacker.train(TrainingData([TrainingStage("original", corpus)]))
    assert attacker.frames.frame_rate == 50.0 and attacker.audio.config.frame_dim == 32
    vectors = attacker.represent_many([corpus.utterances[:2], corpus.utterances[2:3]])
    assert vectors.shape == (2, CPU_TEST_SIZE["embedding_dim"]) and np.isfinite(vectors).all()


def test_text_branch_reads_a_luar_checkpoint_as_published(tmp_path):
    """A folder laid out as LUAR-MUD is published (config model_type LUAR, transformer.* and linear.* tensors
    in model.safetensors) loads without its custom code: the sentence encoder holds LUAR's transformer, the
    head is LUAR's episode attention + max + linear with its weights. The folder is vpeval_multiutt.tiny's (the
    backbone's weights plus noise, a random linear); the backbone here is the packaged MiniLM folder standing in
    for paraphrase-distilroberta (same loading code, smaller)."""
    import torch
    from safetensors.torch import load_file

    from vpeval.errors import ConfigError
    from vpeval_multiutt.text_model import TextModel, packaged_text_model
    from vpeval_multiutt.tiny import write_luar_folder

    backbone = packaged_text_model()
    luar = write_luar_folder(tmp_path / "LUAR-MUD", backbone, embedding_size=16)
    published = load_file(str(luar / "model.safetensors"))
    linear = {name: published[name] for name in ("linear.weight", "linear.bias")}

    model = TextModel(luar, 12, 4, 16, False, backbone).eval()
    own = TextModel(backbone, 12, 4, 16, False).sentence.model.state_dict()  # the backbone's weights, not LUAR's
    for key, value in model.sentence.model.state_dict().items():
        if not key.endswith("position_ids"):
            assert torch.equal(value, published[f"transformer.{key}"]) and not torch.equal(value, own[key]), key
    texts = [["apple river stone", "cloud paper garden", "seven table"]]
    with torch.no_grad():
        x = model.sentences(texts[0])[None]
        expected = (
            linear["linear.bias"]
            + (torch.softmax(x @ x.transpose(1, 2) / x.shape[-1] ** 0.5, -1) @ x).max(1).values
            @ linear["linear.weight"].T
        )
        torch.testing.assert_close(model(texts), expected)
        torch.testing.assert_close(model(texts), model([texts[0][::-1]]))  # order-free
    with pytest.raises(ConfigError, match="luar_backbone_path"):
        TextModel(luar, 12, 4, 16, False)
    with pytest.raises(ConfigError, match="text_dim: 16"):
        TextModel(luar, 12, 4, 32, False, backbone)
