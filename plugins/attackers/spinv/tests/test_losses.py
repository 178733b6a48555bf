"""Each loss term of seed 002 (eq. 7-13) against values worked out by hand on tiny tensors."""

import math

import pytest
import torch

from vpeval_spinv import losses
from vpeval_spinv.training import weighted_sum


def test_align_eq7():
    recovered = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, -1.0]]])  # [V_s=2, B=2, 2]
    target = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # cosines: view 0: 1, 1; view 1: 1/sqrt2, -1
    expected = (0 + 0 + (1 - 1 / math.sqrt(2)) + 2) / 4
    assert losses.align_loss(recovered, target).item() == pytest.approx(expected)


def test_relational_eq8():
    recovered = torch.tensor([[[1.0, 0.0], [1.0, 1.0]], [[1.0, 0.0], [-1.0, 0.0]]])
    target = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # cos(z1, z2) = 0
    # view 0: cos = 1/sqrt2 for (1,2) and (2,1); view 1: cos = -1 twice -> (0.5 * 2 + 1 * 2) / (2 * 2 * 1)
    assert losses.relational_loss(recovered, target).item() == pytest.approx(0.75)
    with pytest.raises(ValueError, match="two utterances"):
        losses.relational_loss(recovered[:, :1], target[:1])


def test_dino_eq9_and_teacher_centering_sharpening():
    student = torch.tensor([[[0.0, math.log(3.0)]]])  # [V_s=1, B=1, K=2]: p = (1/4, 3/4) at tau_s = 1
    teacher = torch.tensor([[[1.0, 0.0]], [[0.5, 0.5]]])  # q for two global views
    expected = (-math.log(0.25) - (0.5 * math.log(0.25) + 0.5 * math.log(0.75))) / 2
    assert losses.dino_loss(student, teacher, 1.0).item() == pytest.approx(expected)
    q = losses.teacher_distribution(torch.tensor([[2.0, 0.0]]), torch.tensor([1.0, 1.0]), 0.5)
    assert q[0, 0].item() == pytest.approx(math.exp(2) / (math.exp(2) + math.exp(-2)))


def test_dino_stops_the_teacher_gradient():
    student = torch.zeros(2, 3, 4, requires_grad=True)
    teacher = torch.full((2, 3, 4), 0.25, requires_grad=True)
    losses.dino_loss(student, teacher, 0.1).backward()
    assert teacher.grad is None and student.grad is not None


def test_variance_eq10():
    cls = torch.tensor([[[0.0, 0.0], [0.0, 2.0], [0.0, 4.0]]])  # column variances (unbiased) 0 and 4
    eps = 1e-4
    expected = (1 - math.sqrt(eps) + max(0.0, 1 - math.sqrt(4 + eps))) / 2
    assert losses.variance_loss(cls, 1.0, eps).item() == pytest.approx(expected)


def test_covariance_eq11():
    cls = torch.tensor([[[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]])  # var 1 and 4, cov 2
    assert losses.covariance_loss(cls).item() == pytest.approx(2 * 2.0**2 / 2)


def test_arcmargin_eq13():
    angle, margin, scale = 0.3, 0.5, 2.0
    cls = torch.tensor([[[math.cos(angle), math.sin(angle)]]])
    weight = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    labels = torch.tensor([0])
    logits = losses.arcmargin_logits(cls, weight, labels, margin, scale)
    assert logits[0, 0, 0].item() == pytest.approx(scale * math.cos(angle + margin), abs=1e-6)  # target: angle + m
    assert logits[0, 0, 1].item() == pytest.approx(scale * math.cos(math.pi / 2 - angle), abs=1e-6)  # others: no margin
    a, b = scale * math.cos(angle + margin), scale * math.sin(angle)
    expected = -(a - math.log(math.exp(a) + math.exp(b)))
    assert losses.speaker_loss(cls, weight, labels, margin, scale).item() == pytest.approx(expected, abs=1e-6)


def test_stage_objectives_eq6_and_eq12_weigh_every_term():
    terms = {
        name: torch.tensor(value)
        for name, value in {"align": 1.0, "rel": 2.0, "dino": 3.0, "var": 4.0, "cov": 5.0, "spk": 6.0}.items()
    }
    from vpeval_spinv.params import STAGE_A_WEIGHTS, STAGE_B_WEIGHTS

    assert weighted_sum(terms, STAGE_A_WEIGHTS).item() == pytest.approx(1 * 1 + 0.5 * 2 + 1 * 3 + 25 * 4 + 1 * 5)
    assert weighted_sum(terms, STAGE_B_WEIGHTS).item() == pytest.approx(
        0.2 * 6 + 0.8 * 1 + 0.4 * 2 + 0.4 * 3 + 10 * 4 + 0.5 * 5
    )
