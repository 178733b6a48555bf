"""The aggregation modules: invariant to the order of the N utterances where the paper's design is,
and really aggregating (frame-concat pools frames jointly; query attention weights utterances)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval.api import PluginContext
from vpeval_multiutt.attacker import MultiUttAttacker
from vpeval_multiutt.audio_model import AudioConfig, AudioModel, QueryAttention
from vpeval_multiutt.fusion import weighted_vector
from vpeval_multiutt.params import CPU_TEST_SIZE, SYSTEMS
from vpeval_multiutt.text_model import AuthorshipHead, contrastive_loss
from vpeval_multiutt.training import Episodes

CONFIG = AudioConfig(frame_dim=20, channels=(16, 16, 16, 16, 48), attention_channels=8, embedding_dim=16)


def model(aggregation: str) -> AudioModel:
    torch.manual_seed(0)
    m = AudioModel(CONFIG, aggregation, heads=4, temperature=0.3)
    return m.eval()


def utterances(n: int = 4) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return [torch.randn(60 + 13 * i, CONFIG.frame_dim, generator=generator) for i in range(n)]


@pytest.mark.parametrize("aggregation", ["mean", "query-attention", "frame-concat"])
def test_side_embedding_ignores_utterance_order(aggregation):
    m, side = model(aggregation), utterances()
    with torch.no_grad():
        a = m.side_embedding(side)
        b = m.side_embedding([side[i] for i in (2, 0, 3, 1)])
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_frame_concat_pools_frames_jointly_not_utterance_vectors():
    m, side = model("frame-concat"), utterances()
    with torch.no_grad():
        joint = m.side_embedding(side)
        per_utterance = torch.stack([m.utterance_embeddings(f[None])[0] for f in side]).mean(0)
        alone = m.side_embedding(side[:1])
    assert not torch.allclose(joint, per_utterance, atol=1e-3)
    # One utterance alone is the plain ECAPA-TDNN embedding.
    torch.testing.assert_close(alone, m.utterance_embeddings(side[0][None])[0], rtol=1e-5, atol=1e-5)


def test_training_and_side_paths_agree_for_equal_length_crops():
    """The batched training path (speakers x N crops) computes what a trial side computes."""
    crops = torch.randn(2 * 3, 50, CONFIG.frame_dim, generator=torch.Generator().manual_seed(2))
    for aggregation in ("query-attention", "frame-concat"):
        m = model(aggregation)
        with torch.no_grad():
            batch, rows = m.training_embeddings(crops, 3)
            sides = torch.stack([m.side_embedding(list(crops[3 * s : 3 * s + 3])) for s in range(2)])
        assert rows == 1
        torch.testing.assert_close(batch, sides, rtol=1e-4, atol=1e-4)


def test_query_attention_is_permutation_invariant_and_uses_the_temperature():
    torch.manual_seed(0)
    attention = QueryAttention(16, heads=4, temperature=0.3).eval()
    x = torch.randn(3, 5, 16)
    with torch.no_grad():
        out = attention(x)
        shuffled = attention(x[:, torch.randperm(5)])
        attention.temperature = 3.0
        cooler = attention(x)
    assert out.shape == (3, 16)
    torch.testing.assert_close(out, shuffled, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(out, cooler, atol=1e-4)


def test_authorship_head_is_permutation_invariant():
    torch.manual_seed(0)
    head = AuthorshipHead(hidden=24, heads=4, out=8).eval()
    x = torch.randn(2, 5, 24)
    with torch.no_grad():
        torch.testing.assert_close(head(x), head(x[:, [4, 2, 0, 1, 3]]), rtol=1e-5, atol=1e-5)


def test_weighted_fusion_vector_gives_the_weighted_score():
    rng = np.random.default_rng(0)
    a1, a2, t1, t2 = rng.normal(size=(4, 7))
    cos = lambda x, y: float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))  # noqa: E731
    for weights in ((0.5, 0.5), (0.2, 0.8)):
        v1, v2 = weighted_vector(a1, t1, weights), weighted_vector(a2, t2, weights)
        assert cos(v1, v2) == pytest.approx(weights[0] * cos(a1, a2) + weights[1] * cos(t1, t2))


def test_contrastive_loss_prefers_matching_episodes():
    x = torch.eye(4)
    assert contrastive_loss(x, x, 0.01) < 1e-3
    assert contrastive_loss(x, x[[1, 2, 3, 0]], 0.01) > 10


def test_episodes_draw_n_distinct_utterances_of_distinct_speakers(train_corpus):
    episodes = Episodes(train_corpus.utterances, 3, 5)
    batches = episodes.epoch(np.random.default_rng(0))
    assert len(batches) == -(-len(train_corpus) // 15)
    for labels, picks in batches:
        assert len(set(labels)) == 5 and picks.shape == (5, 3)
        for label, row in zip(labels, picks):
            assert len(set(row)) == 3
            assert {train_corpus.utterances[k].speaker for k in row} == {episodes.speakers[label]}
    again = episodes.epoch(np.random.default_rng(0))
    assert all((a[1] == b[1]).all() for a, b in zip(batches, again))


def test_params_defaults_are_the_papers():
    p = MultiUttAttacker.Params()
    assert (p.system, p.utterances_per_speaker, p.speakers_per_batch, p.crop_seconds) == ("frame-concat", 5, 64, 4.0)
    assert (p.margin, p.scale, p.lr, p.weight_decay, p.grad_clip, p.lr_step, p.lr_gamma, p.epochs) == (
        0.2,
        30.0,
        5e-4,
        1e-4,
        1.0,
        5,
        0.5,
        30,
    )
    assert (p.embedding_dim, p.attention_heads, p.query_temperature) == (192, 4, 0.3)
    assert (p.text_dim, p.text_temperature, p.text_max_tokens, p.text_lr, p.text_batch_speakers, p.text_epochs) == (
        512,
        0.01,
        30,
        2e-5,
        32,
        40,
    )
    assert (p.fusion_dim, p.fusion_weights, p.fusion_epochs, p.fusion_lr) == (256, (0.5, 0.5), 5, 1e-4)
    # IV-A / IV-C two-stage: 65/35 base/fusion speakers, query attention on a frozen encoder (5 epochs at 1e-4)
    assert (p.base_share, p.aggregation_training) == (0.65, "two-stage")
    qa = MultiUttAttacker.Params(system="query-attention")
    assert qa.trains_fusion and MultiUttAttacker(qa).strategy.audio_aggregation == "mean"
    assert not MultiUttAttacker.Params(system="query-attention", aggregation_training="end-to-end").trains_fusion
    # IV-A validation list: 100 target + 100 non-target trials per validation speaker; IV-C semi-informed 15 at 1e-4
    assert (p.validation_target_trials, p.validation_nontarget_trials) == (100, 100)
    assert (p.semi_epochs, p.semi_lr) == (15, 1e-4)
    # III-B2: weighted fusion weights the embeddings before a trained fusion layer
    assert MultiUttAttacker.Params(system="audio-text", fusion="weighted").trains_fusion
    assert not MultiUttAttacker.Params(system="audio-text", fusion="weighted-score").trains_fusion


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"channels": [16, 16, 16]}, "5 values"),
        ({"channels": [12, 16, 16, 16, 48]}, "multiples of 8"),
        ({"embedding_dim": 30, "attention_heads": 4}, "multiple of attention_heads"),
        ({"system": "text", "fusion": "weighted"}, "audio-text only"),
        ({"query_temperature": 0}, "greater than 0"),
        ({"fusion_weights": (0, 0)}, "positive sum"),
        ({"system": "no-such-system"}, "system"),
        ({"system": "ssl-whisper", "utterances_per_speaker": 17}, "max_utterances"),
        ({"system": "rjca", "rjca_dim": 15}, "even"),
        ({"system": "hybrid", "hybrid_dim": 30, "attention_heads": 4, "embedding_dim": 32}, "hybrid_dim 30"),
    ],
)
def test_params_refuse_bad_values(bad, message):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message):
        MultiUttAttacker.Params(**{**CPU_TEST_SIZE, **bad})


@pytest.mark.parametrize("system", SYSTEMS)  # the params module's list: a new system is covered too
def test_cpu_test_size_is_valid_for_every_system(system):
    assert (
        MultiUttAttacker(MultiUttAttacker.Params(**{**CPU_TEST_SIZE, "system": system}), PluginContext()).system
        == system
    )


def test_hybrid_fusion_ignores_padding_and_special_tokens():
    from vpeval_multiutt.hybrid import HybridFusion

    torch.manual_seed(0)
    fusion = HybridFusion(
        token_dim=12, frame_dim=20, text_dim=8, attention_dim=16, heads=4, hybrid_dim=16, out=6
    ).eval()
    tokens, frames, authorship = torch.randn(1, 5, 12), torch.randn(1, 20, 30), torch.randn(1, 8)
    real = torch.tensor([[False, True, True, True, False]])  # [CLS] w w w [SEP]
    with torch.no_grad():
        alone = fusion(tokens, torch.zeros(1, 5, dtype=torch.bool), real, frames, authorship)
        padded_tokens = torch.cat([tokens, torch.randn(1, 3, 12)], dim=1)
        padding = torch.tensor([[False] * 5 + [True] * 3])
        padded = fusion(
            padded_tokens, padding, torch.cat([real, torch.zeros(1, 3, dtype=torch.bool)], 1), frames, authorship
        )
        other_frames = fusion(tokens, torch.zeros(1, 5, dtype=torch.bool), real, torch.randn(1, 20, 30), authorship)
    assert alone.shape == (1, 6)
    torch.testing.assert_close(alone, padded, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(alone, other_frames, atol=1e-4), "the tokens must read the frames"


@pytest.mark.parametrize("global_text", [False, True])
def test_rjca_serves_any_number_of_utterances_and_reads_both_modalities(global_text):
    from vpeval_multiutt.rjca import Rjca

    torch.manual_seed(0)
    rjca = Rjca(
        audio_dim=12,
        text_dim=10,
        hidden=16,
        recurrent_layers=2,
        fusion_layers=2,
        heads=4,
        dropout=0.6,
        out=8,
        global_text=global_text,
    ).eval()
    with torch.no_grad():
        for n in (5, 10, 15):  # one model for every N of the paper
            audio, text = torch.randn(3, n, 12), torch.randn(3, n, 10)
            if global_text:
                text = text[:, :1].expand(-1, n, -1)
            out = rjca(audio, text)
            assert out.shape == (3, 8) and torch.isfinite(out).all()
            assert not torch.allclose(out, rjca(audio, torch.randn_like(text)), atol=1e-4)
            assert not torch.allclose(out, rjca(torch.randn_like(audio), text), atol=1e-4)


def test_ssl_whisper_reads_the_whisper_frames_of_every_utterance():
    from vpeval_multiutt.ssl_whisper import SslWhisper

    torch.manual_seed(0)
    model = SslWhisper(
        frame_dim=12, whisper_dim=10, dim=16, heads=4, max_utterances=3, attention_channels=8, out=6
    ).eval()
    frames, whisper = torch.randn(2, 3 * 20, 12), torch.randn(2, 3 * 5, 10)
    frame_positions, whisper_positions = torch.arange(3).repeat_interleave(20), torch.arange(3).repeat_interleave(5)
    with torch.no_grad():
        out = model(frames, frame_positions, whisper, whisper_positions)
        changed = whisper.clone()
        changed[:, 10:] = torch.randn(2, 5, 10)  # the third utterance's Whisper frames only
        other = model(frames, frame_positions, changed, whisper_positions)
    assert out.shape == (2, 6)
    assert not torch.allclose(out, other, atol=1e-4)


def test_mean_pooling_is_the_papers_mean_of_embeddings_unless_unit_is_asked():
    """IV-B: the baseline 'aggregates enrollment and target utterance embeddings using mean pooling'; the
    mean of unit vectors (vpeval's earlier default) is `mean_pooling: unit-embeddings`."""
    from vpeval_multiutt.params import MultiUttParams

    assert MultiUttParams().mean_pooling == "embeddings"
    side = utterances()
    plain = model("mean")
    unit = model("mean")
    unit.unit_mean = True
    with torch.no_grad():
        vectors = torch.stack([plain.utterance_embeddings(f[None])[0] for f in side])
        torch.testing.assert_close(plain.side_embedding(side), vectors.mean(0), rtol=1e-5, atol=1e-6)
        normalised = torch.nn.functional.normalize(vectors, dim=-1).mean(0)
        torch.testing.assert_close(unit.side_embedding(side), normalised, rtol=1e-5, atol=1e-6)
        assert not torch.allclose(plain.side_embedding(side), normalised, atol=1e-3)


@pytest.mark.parametrize("pooling", ["query", "asp"])
def test_rjca_pools_any_n_with_either_pooling(pooling):
    """rjca_pooling: the 4-head query (default) or [18]'s attentive statistics pooling; one model serves
    N = 5 and 15, and the pooled vector depends on every position."""
    from vpeval_multiutt.rjca import Rjca

    torch.manual_seed(0)
    m = Rjca(8, 6, 16, 2, 2, 4, 0.0, 12, global_text=False, pooling=pooling).eval()
    g = torch.Generator().manual_seed(3)
    audio, text = torch.randn(2, 15, 8, generator=g), torch.randn(2, 15, 6, generator=g)
    with torch.no_grad():
        assert m(audio[:, :5], text[:, :5]).shape == m(audio, text).shape == (2, 12)
        changed = audio.clone()
        changed[:, -1] += 1.0
        assert not torch.allclose(m(audio, text), m(changed, text), atol=1e-4)
    assert isinstance(getattr(m, "asp" if pooling == "asp" else "pool"), torch.nn.Module)


@pytest.mark.parametrize("schedule", ["step", "constant"])
def test_later_stage_schedule_step_or_constant(schedule):
    """later_stage_schedule: the lazy / hybrid / semi-informed stages follow end-to-end's StepLR (step) or keep
    their rate (constant); end-to-end training keeps StepLR either way."""
    from vpeval_multiutt.params import MultiUttParams

    attacker = MultiUttAttacker.__new__(MultiUttAttacker)
    attacker.params = MultiUttParams(later_stage_schedule=schedule, lr_step=5)
    attacker.context = attacker.history = None
    assert attacker._training_kwargs()["lr_step"] == 5
    assert attacker._training_kwargs(later_stage=True)["lr_step"] == (5 if schedule == "step" else None)
