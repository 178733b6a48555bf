"""The EMA teacher (momentum 0.996 -> 0.9995 on a cosine schedule), the DINO centre (momentum 0.9)
and Stage B's margin ramp move as seed 002 specifies."""

import numpy as np
import pytest
import torch

from vpeval_spinv.model import DinoHead, FrameBatch, Layout, Recovery, Sizes
from vpeval_spinv.teacher import arc_margin, ema_momentum, ema_update, update_center
from vpeval_spinv.training import (
    DistillSettings,
    SpInvNetworks,
    StageSettings,
    Views,
    run_stage,
    stage_losses,
    weighted_sum,
)


def test_momentum_schedule_runs_from_0996_to_09995_on_a_cosine():
    total = 101
    values = [ema_momentum(k, total, 0.996, 0.9995) for k in range(total)]
    assert values[0] == pytest.approx(0.996)
    assert values[-1] == pytest.approx(0.9995)
    assert values[50] == pytest.approx((0.996 + 0.9995) / 2)
    assert values[25] == pytest.approx(0.9995 - 0.0035 * (np.cos(np.pi / 4) + 1) / 2)
    assert all(b >= a for a, b in zip(values, values[1:]))


def test_ema_update_is_m_teacher_plus_one_minus_m_student():
    torch.manual_seed(0)
    teacher, student = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    before = [p.clone() for p in teacher.parameters()]
    ema_update(teacher, student, 0.9)
    for t, b, s in zip(teacher.parameters(), before, student.parameters()):
        assert torch.allclose(t, 0.9 * b + 0.1 * s)


def test_center_update():
    center = torch.tensor([0.0, 0.0])
    logits = torch.tensor([[[1.0, 3.0], [3.0, 5.0]], [[1.0, 3.0], [3.0, 5.0]]])  # [V_g, B, K], mean (2, 4)
    assert torch.allclose(update_center(center, logits, 0.9), torch.tensor([0.2, 0.4]))
    assert torch.allclose(update_center(torch.tensor([1.0, 1.0]), logits, 0.5), torch.tensor([1.5, 2.5]))


def test_margin_ramps_linearly_between_epochs_10_and_20():
    assert [arc_margin(e, 0.2, 10, 20) for e in (0, 10, 15, 20, 39)] == pytest.approx([0, 0, 0.1, 0.2, 0.2])


def tiny_networks():
    torch.manual_seed(1)
    layout = Layout((5, 7), 3)
    sizes = Sizes(hidden=8, layers=1, heads=2, output=8, target=4, max_frames=10, dropout=0.0)
    nets = SpInvNetworks(Recovery(layout, sizes), DinoHead(8, 8, 4, 6))
    nets.classifier = torch.nn.Parameter(torch.randn(3, 8))
    return nets


def random_views(indices, rng):
    def batch():
        n = len(indices)
        return FrameBatch(
            torch.from_numpy(rng.integers(0, 5, size=(n, 6, 2))),
            torch.from_numpy(rng.normal(size=(n, 6, 3))).float(),
            torch.ones(n, 6, dtype=torch.bool),
        )

    return Views(
        [batch(), batch()],
        [batch(), batch()],
        torch.from_numpy(rng.normal(size=(len(indices), 4))).float(),
        torch.tensor([i % 3 for i in indices]),
    )


@pytest.mark.parametrize("stage", ["A", "B"])
def test_training_steps_move_the_teacher_by_the_schedule(stage):
    nets = tiny_networks()
    settings = DistillSettings(0.1, 0.04, 0.9, 0.996, 0.9995, 1.0, 1e-4, 0.2, 0, 2, 30.0, batch_size=2)
    weights = {"align": 1.0, "rel": 0.5, "dino": 1.0, "var": 25.0, "cov": 1.0} | ({"spk": 0.2} if stage == "B" else {})
    seen = []
    original = nets.teacher_step

    def spy(momentum):
        teacher_before = [p.clone() for p in nets.teacher_aub.parameters()]
        student = [p.detach().clone() for p in nets.student.aub.parameters()]
        original(momentum)
        for t, b, s in zip(nets.teacher_aub.parameters(), teacher_before, student):
            torch.testing.assert_close(t, momentum * b + (1 - momentum) * s)
        seen.append(momentum)

    nets.teacher_step = spy
    start = [p.clone() for p in nets.teacher_aub.parameters()]
    center_before = nets.center.clone()
    run_stage(
        nets,
        StageSettings(stage, 3, 1e-2, weights),
        settings,
        4,
        random_views,
        lambda e: np.random.default_rng(e),
        lambda _: None,
    )
    assert len(seen) == 6 and seen[0] == pytest.approx(0.996) and seen[-1] == pytest.approx(0.9995)
    assert any(not torch.equal(a, b) for a, b in zip(start, nets.teacher_aub.parameters()))
    assert not torch.equal(center_before, nets.center)
    # the teacher is never trained by the optimiser: it lags behind the student
    assert any(not torch.allclose(t, s) for t, s in zip(nets.teacher_aub.parameters(), nets.student.aub.parameters()))


def test_stage_ends_in_the_state_of_its_best_validation_epoch():
    nets = tiny_networks()
    settings = DistillSettings(0.1, 0.04, 0.9, 0.996, 0.9995, 1.0, 1e-4, 0.2, 0, 2, 30.0, batch_size=2)
    weights = {"align": 1.0, "rel": 0.5, "dino": 1.0, "var": 25.0, "cov": 1.0}
    scores, states = iter([0.1, 0.9, 0.2]), []

    def validate():
        states.append({k: v.clone() for k, v in nets.student.state_dict().items()})
        return next(scores)

    history = run_stage(
        nets,
        StageSettings("A", 3, 1e-2, weights),
        settings,
        4,
        random_views,
        lambda e: np.random.default_rng(e),
        lambda _: None,
        validate,
    )
    assert [h["validation"] for h in history] == [0.1, 0.9, 0.2]
    for name, value in nets.student.state_dict().items():
        torch.testing.assert_close(value, states[1][name])
    assert any(not torch.equal(states[1][k], states[2][k]) for k in states[1])


def test_dino_entropies_are_monitored_and_reach_ln_k_when_the_teacher_is_uniform():
    nets = tiny_networks()
    settings = DistillSettings(0.1, 0.04, 0.9, 0.996, 0.9995, 1.0, 1e-4, 0.2, 0, 2, 30.0, batch_size=2)
    views = random_views([0, 1], np.random.default_rng(0))
    terms = stage_losses(nets, views, settings, None)
    k = nets.dino.prototypes.weight.shape[0]
    assert 0 < float(terms["teacher_entropy"]) <= np.log(k) + 1e-5
    assert 0 < float(terms["student_entropy"]) <= np.log(k) + 1e-5
    # the batch-mean distribution is at least as spread as the mean per-utterance one (concavity)
    assert float(terms["teacher_entropy"]) <= float(terms["teacher_batch_entropy"]) <= np.log(k) + 1e-5
    # a teacher whose centred logits are equal for every prototype gives q uniform: H(q) = ln K
    with torch.no_grad():
        for p in nets.teacher_dino.mlp.parameters():
            p.zero_()  # bottleneck 0 -> every logit 0
    nets.center = torch.zeros(k)
    assert float(stage_losses(nets, views, settings, None)["teacher_entropy"]) == pytest.approx(np.log(k), abs=1e-5)
    # monitors never enter eq. 6
    weights = {"align": 1.0, "rel": 0.5, "dino": 1.0, "var": 25.0, "cov": 1.0}
    assert float(weighted_sum(terms, weights).detach()) == pytest.approx(
        sum(weights[n] * float(terms[n].detach()) for n in weights)
    )


def test_ema_schedule_restarts_at_stage_b_per_stage_and_runs_once_over_both_otherwise():
    """ema_schedule (section IV: 'the EMA momentum follows a cosine schedule from 0.996 to 0.9995', no word on
    the stages): per-stage starts Stage B at 0.996 again; whole-training continues from where Stage A ended."""
    from vpeval_spinv.teacher import ema_spans

    assert ema_spans([60, 40], whole_training=False) == [None, None]
    a, b = ema_spans([60, 40], whole_training=True)
    assert a == (0, 100) and b == (60, 100)
    end_of_a = ema_momentum(a[0] + 59, a[1], 0.996, 0.9995)
    start_of_b = ema_momentum(b[0], b[1], 0.996, 0.9995)
    assert 0.996 < end_of_a < start_of_b < 0.9995
    assert ema_momentum(0, 40, 0.996, 0.9995) == pytest.approx(0.996)  # per-stage: Stage B restarts
    assert ema_momentum(b[0] + 39, b[1], 0.996, 0.9995) == pytest.approx(0.9995)


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_projection_head_has_the_asked_depth(layers):
    """projection_layers (section IV gives the head's sizes, 512 -> d_z, not its depth; default 2)."""
    import torch

    from vpeval_spinv.model import Sizes, projection_head

    head = projection_head(Sizes(output=32, target=8, projection_layers=layers))
    linears = [m for m in head if isinstance(m, torch.nn.Linear)]
    assert len(linears) == layers and linears[-1].out_features == 8
    assert head(torch.randn(4, 32)).shape == (4, 8)


def test_params_defaults_are_the_papers():
    """Section IV's values are the defaults: d_h 384, d_a 512, Adam batch 96, Stage A 60 epochs at 4e-4 with
    lambda 1 / 0.5 / 1 / 25 / 1, Stage B 40 epochs at 1e-4 with mu 0.2 / 0.8 / 0.4 / 0.4 / 10 / 0.5, margin
    0 -> 0.2 over epochs 10-20, DINO centre 0.9, EMA 0.996 -> 0.9995."""
    from vpeval_spinv.params import SpInvParams

    p = SpInvParams()
    assert (p.hidden, p.output_dim, p.batch_size) == (384, 512, 96)
    assert (p.stage_a_epochs, p.stage_a_lr, p.stage_b_epochs, p.stage_b_lr) == (60, 4e-4, 40, 1e-4)
    assert p.stage_a_weights.model_dump() == {"align": 1.0, "rel": 0.5, "dino": 1.0, "var": 25.0, "cov": 1.0}
    assert p.stage_b_weights.model_dump() == {
        "spk": 0.2,
        "align": 0.8,
        "rel": 0.4,
        "dino": 0.4,
        "var": 10.0,
        "cov": 0.5,
    }
    assert (p.margin, p.margin_ramp_start, p.margin_ramp_end) == (0.2, 10, 20)
    assert (p.center_momentum, p.ema_start, p.ema_end) == (0.9, 0.996, 0.9995)
