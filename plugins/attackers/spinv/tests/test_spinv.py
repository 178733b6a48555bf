"""SpInv end to end on fake speakers: training recovers the victim's embedding, the attack slice,
scoring in the target space, checkpoints, and user errors."""

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from vpeval.api import PluginContext
from vpeval.errors import DataError
from vpeval.types import FrontendOutput, TrainingData, TrainingStage
from vpeval_spinv.attacker import SpInv
from vpeval_spinv.presets import TINY
from vpeval_spinv.views import frames_for, slice_output


def make(tmp_path, encoder, frontend=None, **overrides):
    context = PluginContext(seed=0, work_dir=tmp_path, plugin_factory=lambda kind, name, params: encoder)
    attacker = SpInv(SpInv.Params(**{**TINY, "target_encoder": {"use": "bands"}, **overrides}), context)
    attacker.frontend = frontend
    return attacker


@pytest.fixture(scope="module")
def encoder(split, band_encoder_class):
    return band_encoder_class().fit(split[0])


@pytest.fixture(scope="module")
def frontend(split):
    cpu = pytest.importorskip("vpeval_cpu_frontends.fbank_rvq")
    # tokens + the log-mel frames: the band encoder's input itself, so a tiny G learns in seconds
    params = cpu.FbankRvqFrontend.Params(codebook_size=32, expose="tokens+features")
    fe = cpu.FbankRvqFrontend(params, PluginContext(seed=0))
    fe.fit(split[0])
    return fe


@pytest.fixture(scope="module")
def trained(split, encoder, frontend, tmp_path_factory):
    attacker = make(tmp_path_factory.mktemp("a"), encoder, frontend)
    attacker.train(TrainingData([TrainingStage("original", split[0])]))
    return attacker


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_recovered_embeddings_are_closest_to_the_victims_on_held_out_speakers(split, trained):
    recovered, target, speakers = trained.inversion_embeddings(split[1])
    assert recovered.shape == target.shape == (len(split[1]), 16)
    cos = unit(recovered) @ unit(target).T
    same = speakers[:, None] == speakers[None, :]
    other_utterance = same & ~np.eye(len(speakers), dtype=bool)  # never an utterance with itself
    assert cos[other_utterance].mean() > cos[~same].mean() + 0.2
    # per utterance: the victim's other utterances are nearer than the other speakers' on average
    victim = np.array([cos[i, other_utterance[i]].mean() for i in range(len(speakers))])
    others = np.array([cos[i, ~same[i]].mean() for i in range(len(speakers))])
    assert (victim > others).mean() >= 0.8
    # the recovered space keeps most of the target space's own speaker contrast
    own = unit(target) @ unit(target).T
    assert cos[other_utterance].mean() - cos[~same].mean() > 0.8 * (own[other_utterance].mean() - own[~same].mean())
    assert np.mean(np.diag(cos)) > 0.4  # CosSim, eq. 14


def test_training_lowers_the_alignment_loss(trained):
    first, last = trained.history[0], [h for h in trained.history if h["stage"] == "A"][-1]
    assert last["align"] < 0.7 * first["align"]
    assert {h["stage"] for h in trained.history} == {"A", "B"} and "spk" in trained.history[-1]


def test_scores_compare_recovered_test_side_with_target_enrollment(split, trained):
    enroll, test = split[1].utterances[0], split[1].utterances[5]
    reps = trained.represent_many([[enroll], [test]])
    score = trained.score(reps[[0]], reps[[1]])[0]
    z = trained.target_embedding(enroll)
    z_hat = trained.recover(test)
    assert score == pytest.approx(float(z @ z_hat / np.linalg.norm(z) / np.linalg.norm(z_hat)))


def test_tokens_only_comparison(split, trained, encoder, frontend, tmp_path):
    trained.save(tmp_path / "s")
    recovered_only = make(tmp_path, encoder, frontend, compare="recovered")
    recovered_only.load(tmp_path / "s")
    a, b = split[1].utterances[:2]
    reps = recovered_only.represent_many([[a], [b]])
    assert reps.shape[1] == 16
    assert recovered_only.score(reps[[0]], reps[[1]])[0] == pytest.approx(
        float((unit(trained.recover(a)[None]) @ unit(trained.recover(b)[None]).T)[0, 0])
    )


def test_checkpoint_round_trip_with_weights_only(split, trained, encoder, frontend, tmp_path):
    trained.save(tmp_path / "state")
    state = torch.load(tmp_path / "state" / "recovery.pt", weights_only=True)
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    restored = make(tmp_path, encoder, frontend)
    restored.load(tmp_path / "state")
    side = split[1].utterances[:3]
    np.testing.assert_allclose(restored.represent(side), trained.represent(side), rtol=1e-5, atol=1e-6)
    curve = trained.training_curve()  # the report's training curve: stages A and B, epochs with their loss
    assert curve and {e["stage"] for e in curve} == {"A", "B"} and restored.training_curve() == curve


@pytest.mark.parametrize("rate, frames", [(13.0, 39), (12.5, 38), (25.0, 75)])
def test_attack_slice_is_cut_in_the_frontends_own_frames(rate, frames):
    output = FrontendOutput(rate, np.arange(200)[:, None], (200,), np.zeros((200, 2), np.float32))
    sliced = slice_output(output, 3.0, np.random.default_rng(0))
    assert frames_for(3.0, rate) == frames
    assert len(sliced.tokens) == len(sliced.features) == frames
    assert np.all(np.diff(sliced.tokens[:, 0]) == 1)  # contiguous
    short = FrontendOutput(rate, np.arange(10)[:, None], (200,))
    assert len(slice_output(short, 3.0, np.random.default_rng(0)).tokens) == 10


def test_user_errors(split, encoder, frontend, tmp_path):
    with pytest.raises(DataError, match="frontend"):
        make(tmp_path, encoder).train(TrainingData([TrainingStage("original", split[0])]))
    one_speaker = split[0].with_speakers(split[0].speakers[:1])
    with pytest.raises(DataError, match="two speakers"):
        make(tmp_path, encoder, frontend).train(TrainingData([TrainingStage("original", one_speaker)]))
    with pytest.raises(ValidationError, match="divide"):
        SpInv.Params(hidden=30, heads=4)
    with pytest.raises(ValidationError, match="raise local_seconds"):
        SpInv.Params(observed_seconds=10, local_seconds=3, global_seconds=6)


def test_attackers_differing_only_in_how_they_attack_share_one_trained_model(
    split, encoder, frontend, tmp_path, monkeypatch
):
    import vpeval_spinv.fit

    quick = {"stage_a_epochs": 2, "stage_b_epochs": 1}
    context_options = {"cache_root": str(tmp_path / "cache")}
    calls = []
    real_fit = vpeval_spinv.fit.fit_spinv
    monkeypatch.setattr(vpeval_spinv.fit, "fit_spinv", lambda *a: calls.append(a[0].params) or real_fit(*a))

    def trained_attacker(folder, **overrides):
        attacker = make(tmp_path / folder, encoder, frontend, **quick, **overrides)
        attacker.context.options = context_options
        attacker.train(TrainingData([TrainingStage("original", split[0])]))
        return attacker

    first = trained_attacker("a")
    second = trained_attacker("b", compare="recovered", observed_seconds=0.5)
    assert len(calls) == 1  # the second reused the first's model
    for name, value in first.model.state_dict().items():
        torch.testing.assert_close(second.model.state_dict()[name], value)
    assert second.params.observed_seconds == 0.5 and second.history == first.history
    trained_attacker("c", stage_a_lr=1e-3)  # a training parameter changed: trains again
    assert len(calls) == 2


def test_stage_b_starts_from_the_best_validation_epoch_of_stage_a(split, encoder, frontend, tmp_path):
    validation = split[1].with_speakers(split[1].speakers[:3])
    # the selection scores slices of local_seconds (the length G trains on); observe as much to compare
    attacker = make(
        tmp_path,
        encoder,
        frontend,
        views_from="frames",
        stage_a_epochs=6,
        stage_b_epochs=0,
        stage_a_lr=5e-3,
        observed_seconds=TINY["local_seconds"],
    )
    attacker.train(TrainingData([TrainingStage("original", split[0])], validation))
    scores = [h["validation"] for h in attacker.history]
    recovered, target, _ = attacker.inversion_embeddings(validation)
    kept = float(np.mean(np.sum(unit(recovered) * unit(target), axis=1)))
    assert kept == pytest.approx(max(scores), abs=1e-5)
    assert max(scores) > scores[0]


def test_inversion_embeddings_take_targets_from_a_reference_corpus(split, trained):
    observed = split[1].subset([u.id for u in split[1].utterances[:4]])
    recovered, target, speakers = trained.inversion_embeddings(observed, reference=split[1])
    assert list(speakers) == [u.speaker for u in observed.utterances]
    np.testing.assert_allclose(target[2], trained.target_embedding(split[1][observed.utterances[2].id]))
    np.testing.assert_allclose(recovered[1], trained.recover(observed.utterances[1]))
    with pytest.raises(DataError, match="same utterance ids"):
        trained.inversion_embeddings(split[1], reference=observed)


def test_batched_recovery_equals_one_utterance_at_a_time(split, trained, tmp_path):
    """recover_many pads G's batches (masked keys); each row equals recover() alone within 1e-5 max abs,
    also for an utterance shorter than the observed slice (padded in its batch)."""
    import soundfile

    short = tmp_path / "short.wav"
    soundfile.write(short, split[1].utterances[0].load(16000)[:8000], 16000)
    utterances = [*split[1].utterances[:5], type(split[1].utterances[0])(id="short", speaker="x", path=str(short))]
    alone = []
    for u in utterances:
        trained._recovered.clear()
        alone.append(trained.recover(u))
    trained._recovered.clear()
    batched = trained.recover_many(utterances)
    assert np.abs(np.stack(batched) - np.stack(alone)).max() <= 1e-5
    trained._recovered.clear()


def test_frame_views_are_stored_on_disk_memory_mapped_and_removed_after_training(split, encoder, frontend, tmp_path):
    from vpeval_spinv.views import FrameStore, layout_of

    outputs = frontend.encode_batch([u.load(16000) for u in split[0].utterances[:3]])
    store = FrameStore(tmp_path / "store", layout_of(outputs[0]), outputs[0].frame_rate)
    for output in outputs:
        store.append(output)
    store.close()
    for k, output in enumerate(outputs):
        read = store[k]
        assert isinstance(read.tokens, np.memmap) and isinstance(read.features, np.memmap)
        np.testing.assert_array_equal(read.tokens, output.tokens)
        np.testing.assert_array_equal(read.features, output.features)
    attacker = make(tmp_path / "w", encoder, frontend, views_from="frames", stage_a_epochs=1, stage_b_epochs=0)
    attacker.train(TrainingData([TrainingStage("original", split[0])]))
    assert not any((tmp_path / "w" / "spinv").iterdir())  # the memory-mapped frames are gone


def test_slices_hold_the_frames_the_frontend_emits_for_that_long_a_waveform(tmp_path, encoder):
    class QwenLike:
        """Qwen3-Omni's count: 13 per whole second, then the tail's (0.8 s -> 10, not ceil(0.8 x 13) = 11)."""

        sample_rate = 16000

        def frames(self, samples):
            whole, tail = divmod(samples // 160, 100)
            for _ in range(3):  # three stride-2 convolutions on the tail window
                tail = (tail - 1) // 2 + 1 if tail else 0
            return 13 * whole + tail

    attacker = make(tmp_path, encoder, QwenLike())
    assert attacker.frames_for(0.8, 13.0) == 10 and attacker.frames_for(3.0, 13.0) == 39
    attacker.frontend = type("Plain", (), {"sample_rate": 16000})()
    assert attacker.frames_for(0.8, 13.0) == 11  # no frames(): ceil(seconds x rate)


def test_on_a_gpu_target_embeddings_are_batched_here_not_in_forked_workers(split, encoder, tmp_path):
    cpu = make(tmp_path / "cpu", encoder)
    gpu = make(tmp_path / "gpu", encoder)
    gpu.context.device = "cuda"
    calls = []
    gpu.context.map = lambda *a, **k: calls.append(a) or []
    utterances = split[1].utterances[:5]
    expected, got = cpu.target_embeddings(utterances), gpu.target_embeddings(utterances)
    assert not calls
    np.testing.assert_allclose(np.stack(got), np.stack(expected), atol=1e-6)
