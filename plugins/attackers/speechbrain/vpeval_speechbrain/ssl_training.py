"""Fine-tuning VPC 2026's asv_ssl network on the run's training speech (Track 1's semi-informed attacker).

As the toolkit's train_speaker_embeddings_ssl_ft.py with train_ecapa_ssl_tdnn_small.yaml: the released
embedding_model.ckpt is the start (the classifier starts fresh), WavLM stays frozen, each batch is
random `crop_seconds` crops for the log-mel stream and the WHOLE files for the WavLM stream (the toolkit
reads the batch's files again by path; the network brings the WavLM frames to the crop's frame count),
loss AAM softmax (margin 0.2, scale 30), AdamW (weight decay 0.01) whose learning rate speechbrain's
CyclicLRScheduler sets before every step (base 1e-8, max lr, step 65000: the first step runs at clr(1), not
at lr), gradients clipped at max_grad_norm (the Brain's 5.0), drop_last. Epochs, batch size and lr come from
the recipe (vpc2026-track1: 2, 32, 0.01) or the parameters.

As the toolkit too: each utterance gives one crop per whole `crop_seconds` of it per epoch (prepare_libri's
chunks; `drop_short`: none for an utterance shorter than a crop, else one, repeated to fill it), and the crops
are augmented with the YAML's DropFreq and DropChunk before the features (`augment`).

Differences: a batch's WavLM layers come from the frontend per whole file (masked), zero-padded to the
longest, where the toolkit gives WavLM a random `wavlm_max_length` (10 s) window of each file, zero-padded to
10 s, as one unmasked batch; fp32 throughout.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from vpeval.errors import DataError
from vpeval.types import TrainingData
from vpeval_speechbrain.ssl import SslEmbedder, save_ssl_network, wavlm_layers
from vpeval_torch.crops import log_short_utterances

WEIGHT_DECAY = 0.01  # train_ecapa_ssl_tdnn_small.yaml: AdamW weight_decay
BASE_LR = 1e-8
HISTORY = "training_history.json"


def finetune_ssl(embedder: SslEmbedder, params, context, data: TrainingData, out: Path, name: str) -> Path:
    """Train `embedder.network` in place by the recipe; save it to `out` (asv_ssl layout); return `out`."""
    from speechbrain.lobes.features import Fbank
    from speechbrain.lobes.models.ECAPA_TDNN import Classifier
    from speechbrain.nnet.losses import AdditiveAngularMargin, LogSoftmaxWrapper
    from speechbrain.nnet.schedulers import CyclicLRScheduler
    from speechbrain.processing.features import InputNormalization

    utterances = list(data.corpus.utterances)
    speakers = sorted({u.speaker for u in utterances})
    batch_size = int(params.recipe_value("batch_size"))
    segments = _segments(utterances, params.crop_seconds, params.drop_short)
    short = len(utterances) - len(set(segments)) if params.drop_short else 0
    log_short_utterances(context.log, name, short, len(utterances), params.crop_seconds)
    if len(speakers) < 2 or len(segments) < batch_size:
        raise DataError(
            f"{name} needs training speech of at least two speakers and one batch ({batch_size} crops of "
            f"{params.crop_seconds} s), got {len(speakers)} speakers and {len(segments)} crops; give more "
            "attacker-training speech (or a shorter crop_seconds)."
        )
    device = context.device
    labels = {s: i for i, s in enumerate(speakers)}
    crop = int(params.crop_seconds * 16000)
    network = embedder.network.to(device)
    features = Fbank(n_mels=network.blocks[0].conv.conv.in_channels).to(device)
    norm = InputNormalization(norm_type="sentence", std_norm=False).to(device)
    with torch.random.fork_rng(devices=[torch.device(device)] if device.startswith("cuda") else []):
        torch.manual_seed(context.torch_seed(name, "classifier"))
        classifier = Classifier(input_size=embedder.dim, out_neurons=len(speakers)).to(device)
        cost = LogSoftmaxWrapper(AdditiveAngularMargin(margin=params.margin, scale=params.scale))
        trainable = list(network.parameters()) + list(classifier.parameters())
        optimizer = torch.optim.AdamW(trainable, lr=params.recipe_value("lr"), weight_decay=WEIGHT_DECAY)
        schedule = CyclicLRScheduler(
            base_lr=BASE_LR, max_lr=params.recipe_value("lr"), step_size=params.cyclic_step_size
        )
        augment = _augmenter() if params.augment else None
        history = []
        for epoch in range(int(params.recipe_value("epochs"))):
            rng = context.rng(name, "ssl-epoch", epoch)
            batches = _epoch_batches(segments, batch_size, rng)
            network.train()
            classifier.train()
            losses = []
            for batch in context.progress(batches, total=len(batches), description=f"{name}: epoch {epoch + 1}"):
                raws = [utterances[i].load(16000) for i in batch]
                crops = torch.from_numpy(np.stack([_crop(r, crop, rng) for r in raws])).to(device)
                with torch.no_grad():
                    if augment is not None:  # as the toolkit's compute_forward: the waveform crops, before Fbank
                        crops, _ = augment(crops, torch.ones(len(batch), device=device))
                    feats = norm(features(crops), torch.ones(len(batch), device=device))
                    layers = wavlm_layers(embedder.frontend, raws, device)
                target = torch.tensor([labels[utterances[i].speaker] for i in batch], device=device)
                loss = cost(classifier(network(feats, layers)), target.unsqueeze(1))
                # as the toolkit: compute_objectives sets this batch's rate (clr of the step count) before the step
                schedule.on_batch_end(optimizer)
                optimizer.zero_grad()
                loss.backward()
                if params.max_grad_norm is not None:  # speechbrain's Brain.optimizers_step clips (default 5.0)
                    torch.nn.utils.clip_grad_norm_(trainable, params.max_grad_norm)
                optimizer.step()
                losses.append(float(loss.detach()))
            history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)), "lr": optimizer.param_groups[0]["lr"]})
            context.log.info("%s: epoch %d, loss %.4f", name, epoch + 1, history[-1]["loss"])
    network.eval()
    save_ssl_network(network, out)
    (out / HISTORY).write_text(json.dumps(history, indent=2))
    return out


def _segments(utterances: list, crop_seconds: float, drop_short: bool) -> list[int]:
    """Utterance indices, one per whole crop of each (prepare_libri's chunk list, as the 2024 trainer's
    segments); an utterance shorter than a crop: none with `drop_short`, else one (repeated to fill it)."""
    from vpeval_torch.crops import crop_items

    items = crop_items(utterances, [0] * len(utterances))  # lengths from metadata or headers: no samples read
    seconds = [item.frames / item.sample_rate for item in items]
    counts = [int(s / crop_seconds) if drop_short else max(1, int(s // crop_seconds)) for s in seconds]
    return [i for i, count in enumerate(counts) for _ in range(count)]


def _epoch_batches(segments: list[int], batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The epoch's batches of utterance indices: the segments shuffled, the last partial batch dropped."""
    order = np.asarray(segments)[rng.permutation(len(segments))]
    return [order[i : i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]


def _augmenter():
    """train_ecapa_ssl_tdnn_small.yaml's wav_augment: DropFreq and DropChunk, both on every training batch."""
    from speechbrain.augment.augmenter import Augmenter
    from speechbrain.augment.time_domain import DropChunk, DropFreq

    drop_freq = DropFreq(
        drop_freq_low=0, drop_freq_high=1, drop_freq_count_low=1, drop_freq_count_high=3, drop_freq_width=0.05
    )
    drop_chunk = DropChunk(drop_length_low=1000, drop_length_high=2000, drop_count_low=1, drop_count_high=5)
    return Augmenter(
        parallel_augment=False,
        concat_original=False,
        min_augmentations=4,
        max_augmentations=4,
        augment_prob=1.0,
        augmentations=[drop_freq, drop_chunk],
    )


def _crop(audio: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """A random `length`-sample stretch; shorter audio repeated to fill it."""
    audio = np.asarray(audio, dtype=np.float32)
    if audio.size < length:
        audio = np.tile(audio, -(-length // max(audio.size, 1)))
    start = int(rng.integers(0, audio.size - length + 1))
    return audio[start : start + length]
