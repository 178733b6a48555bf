"""Shared helpers for the speech-metric tests: a scripted ASR and synthetic emotional speech."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import soundfile as sf

from vpeval.api import ASR, PluginContext, Transcript
from vpeval.types import Corpus, Utterance
from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder, write_random_modules


def audio_key(audio: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(audio, dtype=np.float32).tobytes()).hexdigest()


class ScriptedASR(ASR):
    """Returns a preset text per waveform and counts calls (to check the transcript cache)."""

    name = "scripted"

    def __init__(self, texts_by_audio: dict[str, str]):
        super().__init__()
        self.texts_by_audio = texts_by_audio
        self.calls = 0

    def transcribe(self, audio: np.ndarray) -> Transcript:
        self.calls += 1
        return Transcript(self.texts_by_audio[audio_key(audio)])


def context_with(tmp_path: Path, asr: ASR | None = None) -> PluginContext:
    factory = None if asr is None else (lambda kind, name, params: asr)
    return PluginContext(seed=3, work_dir=tmp_path / "work", plugin_factory=factory)


EMOTION_STYLE = {
    # pitch factor, pitch slope over the utterance (octaves), level, harmonic tilt, speaking-rate factor
    "neutral": (1.00, 0.00, 0.20, 0.80, 1.0),
    "happy": (1.30, 0.40, 0.40, 0.88, 1.3),
    "sad": (0.85, -0.30, 0.08, 0.65, 0.6),
    "angry": (1.20, -0.10, 0.70, 0.95, 1.5),
}


def emotional_speech(base_f0: float, emotion: str, rng: np.random.Generator, rate: int = 16000) -> np.ndarray:
    """Syllable-like harmonic bursts whose pitch, contour, level, brightness and tempo follow the emotion."""
    factor, slope, level, tilt, tempo = EMOTION_STYLE[emotion]
    seconds = rng.uniform(0.9, 1.2)
    t = np.arange(int(seconds * rate)) / rate
    f0 = base_f0 * factor * rng.uniform(0.95, 1.05) * 2 ** (slope * t / seconds)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voice = sum(tilt**k * np.sin(k * phase) for k in range(1, 16))
    syllables = 0.5 - 0.5 * np.cos(2 * np.pi * 3.0 * tempo * t)  # voiced bursts at a syllable rate
    audio = level * rng.uniform(0.85, 1.15) * voice / 6 * syllables + rng.normal(0, 0.002, t.size)
    return audio.astype(np.float32)


def emotional_corpus(folder: Path, speakers: int = 6, per_emotion: int = 2, seed: int = 0) -> Corpus:
    folder.mkdir(parents=True, exist_ok=True)
    utterances = []
    for s in range(speakers):
        base_f0 = 110.0 if s % 2 else 200.0
        base_f0 *= np.random.default_rng([seed, s]).uniform(0.85, 1.15)
        for e, emotion in enumerate(EMOTION_STYLE):
            for k in range(per_emotion):
                rng = np.random.default_rng([seed, s, e, k])
                uid = f"s{s}-{emotion}-{k}"
                path = folder / f"{uid}.wav"
                sf.write(path, emotional_speech(base_f0, emotion, rng), 16000)
                utterances.append(Utterance(uid, f"s{s}", str(path), gender="m" if s % 2 else "f", emotion=emotion))
    return Corpus("emotional", utterances)


# Test modules are imported with --import-mode=importlib, so they reach these helpers through fixtures.
import pytest  # noqa: E402


@pytest.fixture
def scripted_asr():
    return ScriptedASR


@pytest.fixture
def make_context():
    return context_with


@pytest.fixture
def make_emotional_corpus():
    return emotional_corpus


@pytest.fixture
def key_of_audio():
    return audio_key


# -- tiny random-weight SpeechBrain folders in the exact layout (vpeval_speech.tiny), and the transformer ASR ----


@pytest.fixture(scope="session")
def encoder_asr_folder(tmp_path_factory) -> Path:
    return tiny_encoder_asr_folder(tmp_path_factory.mktemp("sb-asr"))


@pytest.fixture(scope="session")
def emotion_models(tmp_path_factory) -> Path:
    return tiny_emotion_folders(tmp_path_factory.mktemp("sb-ser"))


TRANSFORMER_YAML = """
sample_rate: 16000
n_fft: 400
n_mels: 20
d_model: 32
output_neurons: {tokens}
blank_index: 0
pad_index: 0
bos_index: 1
eos_index: 2
min_decode_ratio: 0.0
max_decode_ratio: 1.0
test_beam_size: 3
lm_weight: 0.6
ctc_weight_decode: 0.4

CNN: !new:speechbrain.lobes.models.convolution.ConvolutionFrontEnd
    input_shape: (8, 10, 20)
    num_blocks: 2
    num_layers_per_block: 1
    out_channels: (8, 8)
    kernel_sizes: (3, 3)
    strides: (2, 2)
    residuals: (False, False)
    norm: !name:speechbrain.nnet.normalization.LayerNorm

Transformer: !new:speechbrain.lobes.models.transformer.TransformerASR.TransformerASR
    input_size: 40
    tgt_vocab: !ref <output_neurons>
    d_model: !ref <d_model>
    nhead: 2
    num_encoder_layers: 1
    num_decoder_layers: 1
    d_ffn: 64
    dropout: 0.1
    activation: !name:torch.nn.GELU
    encoder_module: transformer
    attention_type: regularMHA
    normalize_before: True
    causal: False

ctc_lin: !new:speechbrain.nnet.linear.Linear
    input_size: !ref <d_model>
    n_neurons: !ref <output_neurons>

seq_lin: !new:speechbrain.nnet.linear.Linear
    input_size: !ref <d_model>
    n_neurons: !ref <output_neurons>

lm_model: !new:speechbrain.lobes.models.transformer.TransformerLM.TransformerLM
    vocab: !ref <output_neurons>
    d_model: !ref <d_model>
    nhead: 2
    num_encoder_layers: 1
    num_decoder_layers: 0
    d_ffn: 64
    dropout: 0.0
    activation: !name:torch.nn.GELU
    normalize_before: False

ctc_scorer: !new:speechbrain.decoders.scorer.CTCScorer
    eos_index: !ref <eos_index>
    blank_index: !ref <blank_index>
    ctc_fc: !ref <ctc_lin>

transformerlm_scorer: !new:speechbrain.decoders.scorer.TransformerLMScorer
    language_model: !ref <lm_model>
    temperature: 1.15

scorer: !new:speechbrain.decoders.scorer.ScorerBuilder
    full_scorers: [!ref <transformerlm_scorer>, !ref <ctc_scorer>]
    weights:
        transformerlm: !ref <lm_weight>
        ctc: !ref <ctc_weight_decode>

decoder: !new:speechbrain.decoders.S2STransformerBeamSearcher
    modules: [!ref <Transformer>, !ref <seq_lin>]
    bos_index: !ref <bos_index>
    eos_index: !ref <eos_index>
    min_decode_ratio: !ref <min_decode_ratio>
    max_decode_ratio: !ref <max_decode_ratio>
    beam_size: !ref <test_beam_size>
    temperature: 1.15
    using_eos_threshold: False
    length_normalization: True
    scorer: !ref <scorer>

normalizer: !new:speechbrain.processing.features.InputNormalization
    norm_type: global

compute_features: !new:speechbrain.lobes.features.Fbank
    sample_rate: !ref <sample_rate>
    n_fft: !ref <n_fft>
    n_mels: !ref <n_mels>

tokenizer: !new:sentencepiece.SentencePieceProcessor

Tencoder: !new:speechbrain.lobes.models.transformer.TransformerASR.EncoderWrapper
    transformer: !ref <Transformer>

encoder: !new:speechbrain.nnet.containers.LengthsCapableSequential
    input_shape: [null, null, !ref <n_mels>]
    compute_features: !ref <compute_features>
    normalize: !ref <normalizer>
    cnn: !ref <CNN>
    transformer_encoder: !ref <Tencoder>

asr_model: !new:torch.nn.ModuleList
    - [!ref <CNN>, !ref <Transformer>, !ref <seq_lin>, !ref <ctc_lin>]

modules:
    compute_features: !ref <compute_features>
    normalizer: !ref <normalizer>
    pre_transformer: !ref <CNN>
    transformer: !ref <Transformer>
    asr_model: !ref <asr_model>
    lm_model: !ref <lm_model>
    encoder: !ref <encoder>
    decoder: !ref <decoder>

pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        normalizer: !ref <normalizer>
        asr: !ref <asr_model>
        lm: !ref <lm_model>
        tokenizer: !ref <tokenizer>
"""


def tiny_encoder_decoder_asr_folder(root: Path) -> Path:
    """speechbrain/asr-transformer-transformerlm-librispeech's layout in speechbrain 1.x form (Fbank, global
    InputNormalization, CNN front end, TransformerASR, CTC + transformer-LM scorers, beam search): random
    weights, normalizer.ckpt / asr.ckpt / lm.ckpt / tokenizer.ckpt (a unigram sentencepiece model)."""
    import sentencepiece
    import torch
    from hyperpyyaml import load_hyperpyyaml

    folder = root / "asr-transformer"
    folder.mkdir()
    text = root / "text.txt"
    text.write_text("\n".join(["THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG", "PACK MY BOX WITH FIVE DOZEN JUGS"] * 20))
    sentencepiece.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(root / "unigram"),
        vocab_size=36,
        model_type="unigram",
        character_coverage=1.0,
        pad_id=0,
        bos_id=1,
        eos_id=2,
        unk_id=3,
        minloglevel=2,
    )
    (folder / "tokenizer.ckpt").write_bytes((root / "unigram.model").read_bytes())
    tokens = sentencepiece.SentencePieceProcessor(model_file=str(root / "unigram.model")).vocab_size()
    yaml_text = TRANSFORMER_YAML.format(tokens=tokens)
    (folder / "hyperparams.yaml").write_text(yaml_text)
    write_random_modules(yaml_text, folder, {"asr_model": "asr.ckpt", "lm_model": "lm.ckpt"})
    objects = load_hyperpyyaml(yaml_text)
    generator = torch.Generator().manual_seed(5)
    stats = {
        "count": 100,
        "glob_mean": torch.randn(20, generator=generator),
        "glob_std": 1 + torch.rand(20, generator=generator),
    }
    objects["normalizer"]._load_statistics_dict(stats)
    torch.save(objects["normalizer"]._statistics_dict(), folder / "normalizer.ckpt")
    return folder


@pytest.fixture(scope="session")
def encoder_decoder_asr_folder(tmp_path_factory) -> Path:
    return tiny_encoder_decoder_asr_folder(tmp_path_factory.mktemp("sb-transformer"))
