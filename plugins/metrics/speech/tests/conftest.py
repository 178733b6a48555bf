"""Shared helpers for the speech-metric tests: a scripted ASR and synthetic emotional speech."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import soundfile as sf

from vpeval.api import ASR, PluginContext, Transcript
from vpeval.types import Corpus, Utterance


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


# -- tiny random-weight SpeechBrain folders in the exact layout, written with speechbrain's own classes ----


def tiny_wav2vec2_folder(folder: Path) -> Path:
    """A random transformers wav2vec2 (2 layers of 32) with its feature extractor settings, as save_pretrained
    writes them: what a local copy of facebook/wav2vec2-* looks like."""
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2Model

    torch.manual_seed(0)
    config = Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(32, 32),
        conv_kernel=(10, 3),
        conv_stride=(5, 4),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        feat_extract_norm="layer",
        do_stable_layer_norm=True,
        vocab_size=32,
    )
    Wav2Vec2Model(config).save_pretrained(folder)
    Wav2Vec2FeatureExtractor(do_normalize=True, return_attention_mask=True).save_pretrained(folder)
    return folder


def write_random_modules(yaml_text: str, folder: Path, files: dict[str, str], seed: int = 1) -> None:
    """Build the YAML with HyperPyYAML (the test's own file), randomise its weights and batch-norm statistics,
    and save each named object's state dict as `<file>` in the folder, as the Pretrainer expects them."""
    import torch
    from hyperpyyaml import load_hyperpyyaml

    objects = load_hyperpyyaml(yaml_text)
    torch.manual_seed(seed)
    with torch.no_grad():
        for key, file in files.items():
            module = objects[key]
            if key != "wav2vec2":  # the transformers weights stay as saved; the heads get large random ones
                for parameter in module.parameters():
                    parameter.normal_(0, 1.0)
                for sub in module.modules():
                    if isinstance(sub, torch.nn.BatchNorm1d):
                        sub.running_mean.normal_(0, 0.1)
                        sub.running_var.uniform_(0.5, 2.0)
            torch.save(module.state_dict(), folder / file)


ASR_YAML = """
sample_rate: 16000
wav2vec2_hub: {hub}
save_folder: {save}
dnn_neurons: 24
output_neurons: {tokens}
blank_index: 0

enc: !new:speechbrain.nnet.containers.Sequential
    input_shape: [null, null, 32]
    linear1: !name:speechbrain.nnet.linear.Linear
        n_neurons: !ref <dnn_neurons>
        bias: True
    bn1: !name:speechbrain.nnet.normalization.BatchNorm1d
    activation: !new:torch.nn.LeakyReLU
    drop: !new:torch.nn.Dropout
        p: 0.15
    linear2: !name:speechbrain.nnet.linear.Linear
        n_neurons: !ref <dnn_neurons> * 2 // 2
        bias: True
    bn2: !name:speechbrain.nnet.normalization.BatchNorm1d
    activation2: !new:torch.nn.LeakyReLU

wav2vec2: !new:speechbrain.lobes.models.huggingface_transformers.wav2vec2.Wav2Vec2
    source: !ref <wav2vec2_hub>
    output_norm: True
    freeze: True
    save_path: !ref <save_folder>/wav2vec2_checkpoint

ctc_lin: !new:speechbrain.nnet.linear.Linear
    input_size: !ref <dnn_neurons>
    n_neurons: !ref <output_neurons>

log_softmax: !new:speechbrain.nnet.activations.Softmax
    apply_log: True

ctc_cost: !name:speechbrain.nnet.losses.ctc_loss
    blank_index: !ref <blank_index>

asr_model: !new:torch.nn.ModuleList
    - [!ref <enc>, !ref <ctc_lin>]

tokenizer: !new:sentencepiece.SentencePieceProcessor

encoder: !new:speechbrain.nnet.containers.LengthsCapableSequential
    wav2vec2: !ref <wav2vec2>
    enc: !ref <enc>
    ctc_lin: !ref <ctc_lin>
    log_softmax: !ref <log_softmax>

decoding_function: !name:speechbrain.decoders.ctc_greedy_decode
    blank_id: !ref <blank_index>

modules:
    encoder: !ref <encoder>

pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        wav2vec2: !ref <wav2vec2>
        asr: !ref <asr_model>
        tokenizer: !ref <tokenizer>
"""


def tiny_encoder_asr_folder(root: Path) -> Path:
    """VPC 2024's asr-wav2vec2-librispeech layout (hyperparams.yaml, wav2vec2.ckpt, asr.ckpt, tokenizer.ckpt: a
    character sentencepiece model), random weights, the wav2vec2 source a local transformers folder."""
    import sentencepiece

    hub = tiny_wav2vec2_folder(root / "hf")
    folder = root / "asr"
    folder.mkdir()
    text = root / "text.txt"
    text.write_text("\n".join(["THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG", "PACK MY BOX WITH FIVE DOZEN JUGS"] * 20))
    sentencepiece.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(root / "tokenizer"),
        vocab_size=28,
        model_type="char",
        character_coverage=1.0,
        bos_id=-1,
        eos_id=-1,
        unk_id=0,
        minloglevel=2,
    )
    (folder / "tokenizer.ckpt").write_bytes((root / "tokenizer.model").read_bytes())
    tokens = sentencepiece.SentencePieceProcessor(model_file=str(root / "tokenizer.model")).vocab_size()
    yaml_text = ASR_YAML.format(hub=hub, save=root / "save", tokens=tokens)
    (folder / "hyperparams.yaml").write_text(yaml_text)
    write_random_modules(yaml_text, folder, {"asr_model": "asr.ckpt", "wav2vec2": "wav2vec2.ckpt"})
    return folder


@pytest.fixture(scope="session")
def encoder_asr_folder(tmp_path_factory) -> Path:
    return tiny_encoder_asr_folder(tmp_path_factory.mktemp("sb-asr"))


EMOTION_YAML = """
wav2vec2_hub: {hub}
pretrained_path: {folder}
encoder_dim: 32
out_n_neurons: 4

wav2vec2: !new:speechbrain.lobes.models.huggingface_transformers.wav2vec2.Wav2Vec2
    source: !ref <wav2vec2_hub>
    output_norm: True
    freeze: True
    save_path: wav2vec2_checkpoints

avg_pool: !new:speechbrain.nnet.pooling.StatisticsPooling
    return_std: False

output_mlp: !new:speechbrain.nnet.linear.Linear
    input_size: !ref <encoder_dim>
    n_neurons: !ref <out_n_neurons>
    bias: False

model: !new:torch.nn.ModuleList
    - [!ref <output_mlp>]

modules:
    wav2vec2: !ref <wav2vec2>
    output_mlp: !ref <output_mlp>
    avg_pool: !ref <avg_pool>

softmax: !new:speechbrain.nnet.activations.Softmax

label_encoder: !new:speechbrain.dataio.encoder.CategoricalEncoder

pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        wav2vec2: !ref <wav2vec2>
        model: !ref <model>
        label_encoder: !ref <label_encoder>
    paths:
        wav2vec2: !ref <pretrained_path>/wav2vec2.ckpt
        model: !ref <pretrained_path>/model.ckpt
        label_encoder: !ref <pretrained_path>/label_encoder.txt
"""

# What speechbrain/emotion-recognition-wav2vec2-IEMOCAP ships as custom_interface.py: speechbrain's
# foreign_class imports it for the reference side of the tests (vpeval never imports a folder's code).
CUSTOM_INTERFACE = """
import torch
from speechbrain.inference.interfaces import Pretrained


class CustomEncoderWav2vec2Classifier(Pretrained):
    def encode_batch(self, wavs, wav_lens=None, normalize=False):
        if len(wavs.shape) == 1:
            wavs = wavs.unsqueeze(0)
        if wav_lens is None:
            wav_lens = torch.ones(wavs.shape[0], device=self.device)
        wavs, wav_lens = wavs.to(self.device), wav_lens.to(self.device)
        wavs = wavs.float()
        outputs = self.mods.wav2vec2(wavs)
        outputs = self.mods.avg_pool(outputs, wav_lens)
        return outputs.view(outputs.shape[0], -1)

    def classify_batch(self, wavs, wav_lens=None):
        outputs = self.mods.output_mlp(self.encode_batch(wavs, wav_lens))
        out_prob = self.hparams.softmax(outputs)
        score, index = torch.max(out_prob, dim=-1)
        return out_prob, score, index, self.hparams.label_encoder.decode_torch(index)
"""


def tiny_emotion_folders(root: Path, folds: int = 2) -> Path:
    """VPC 2024's exp/ser layout: fold_<k> classifier folders (emotion-recognition-wav2vec2-IEMOCAP's files),
    random weights that differ per fold; the wav2vec2 source a local transformers folder."""
    from speechbrain.dataio.encoder import CategoricalEncoder

    hub = tiny_wav2vec2_folder(root / "hf")
    models = root / "ser"
    for fold in range(1, folds + 1):
        folder = models / f"fold_{fold}"
        folder.mkdir(parents=True)
        yaml_text = EMOTION_YAML.format(hub=hub, folder=folder)
        (folder / "hyperparams.yaml").write_text(yaml_text)
        (folder / "custom_interface.py").write_text(CUSTOM_INTERFACE)
        encoder = CategoricalEncoder()
        encoder.update_from_iterable(["neu", "ang", "hap", "sad"])
        encoder.save(folder / "label_encoder.txt")
        write_random_modules(yaml_text, folder, {"model": "model.ckpt", "wav2vec2": "wav2vec2.ckpt"}, seed=fold)
        # Each fold's wav2vec2 differs too (the folds are fine-tuned separately).
        import torch

        state = torch.load(folder / "wav2vec2.ckpt")
        generator = torch.Generator().manual_seed(fold)
        torch.save(
            {k: v + 0.05 * torch.randn(v.shape, generator=generator) for k, v in state.items()},
            folder / "wav2vec2.ckpt",
        )
    return models


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
