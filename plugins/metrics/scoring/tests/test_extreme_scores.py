"""Every score metric on extreme but finite scores (near +-1e308, subnormal, mixed scales, a few ulps
apart): a correct value, checked against an independent computation on rescaled scores or ranks, or
NaN with the reason in the result's details. Never NaN without a reason, never a silent overflow."""

import math
from fractions import Fraction

import numpy as np
import pytest

from vpeval.api import MetricInputs, PluginContext, SimilarityMatrix
from vpeval.plugins import get_plugin_manager
from vpeval.types import Scores
from vpeval_scoring.inversion import cos_sim
from vpeval_scoring.linkability import linkability

RANK_METRICS = [
    "eer-step",
    "eer-rocch",
    "eer",
    "min-dcf",
    "min-cllr",
    "zebra",
]  # depend on the order of the scores only
SCORE_METRICS = RANK_METRICS + ["cllr", "linkability"]


def metric(name, **params):
    cls = get_plugin_manager().get("metric", name)
    extra = {"bootstrap": 0} if "bootstrap" in cls.Params.model_fields else {}
    return cls(cls.Params(**{**extra, **params}), PluginContext(seed=1))


def values(name: str, scores: np.ndarray, targets: np.ndarray, **params) -> list[tuple[float, dict]]:
    results = metric(name, **params).compute(MetricInputs(scores=Scores(scores, targets)))
    return [(r.value, r.details) for r in results]


def base_trials(n=400, seed=0):
    """Scores on a grid of integers (so that every rescaling below is exact), targets higher on average."""
    rng = np.random.default_rng(seed)
    targets = rng.random(n) < 0.5
    scores = np.round(rng.normal(targets * 2.0, 1.0) * 100).astype(np.float64)
    return scores, targets


def exact_linkability(scores, targets, n_bins=None, omega=1.0) -> float:
    """The definition in exact rational arithmetic: equal-width bins between min and max (last one closed),
    LR per bin from the two classes' shares, D(s) as in the paper, trapezoid over bin centres. The bin
    width cancels out of the trapezoid sum, so no density is ever formed."""
    xs = [Fraction(float(s)) for s in scores]
    mated = [x for x, t in zip(xs, targets, strict=True) if t]
    non = [x for x, t in zip(xs, targets, strict=True) if not t]
    bins = min(len(mated) // 10, 100) if n_bins is None else n_bins
    lo, hi = min(xs), max(xs)

    def counts(group):
        c = [0] * bins
        for x in group:
            c[min(math.floor((x - lo) * bins / (hi - lo)), bins - 1)] += 1
        return c

    c1, c2 = counts(mated), counts(non)
    g = []
    for a, b in zip(c1, c2, strict=True):
        share = Fraction(a, len(mated))
        if b == 0:
            d = 1 if a else 0
        else:
            lr = omega * Fraction(a, len(mated)) / Fraction(b, len(non))
            d = 2 * lr / (1 + lr) - 1 if lr > 1 else 0
        g.append(d * share)
    return float(sum((g[i] + g[i + 1]) / 2 for i in range(bins - 1)))


def exact_cllr(scores, targets) -> float:
    """Cllr in bits with the scores as natural-log LLRs, summed exactly: for |llr| > 50 the cost in nats
    is max(llr, 0) to far below a float's precision, so the huge scores need no exp at all."""

    def nats(llr: float) -> Fraction:
        return Fraction(max(llr, 0.0)) if abs(llr) > 50 else Fraction(math.log1p(math.exp(-abs(llr))) + max(llr, 0.0))

    tar = [nats(-float(s)) for s, t in zip(scores, targets, strict=True) if t]
    non = [nats(float(s)) for s, t in zip(scores, targets, strict=True) if not t]
    return float((sum(tar) / len(tar) + sum(non) / len(non)) / 2 / Fraction(math.log(2.0)))


@pytest.mark.parametrize("power", [1012, 1000, 500, -1000, -1060])
def test_rank_metrics_and_linkability_equal_their_values_on_exactly_rescaled_scores(power):
    """Scores times 2**power (up to ~1e307 and down into the subnormals) are the same trials: every
    metric that depends on the order or the histogram only gives exactly the same value."""
    scores, targets = base_trials()
    scaled = np.ldexp(scores, power)
    assert np.isfinite(scaled).all() and (np.ldexp(scaled, -power) == scores).all(), "the rescaling is exact"
    for name in RANK_METRICS + ["linkability"]:
        got, want = values(name, scaled, targets), values(name, scores, targets)
        assert [v for v, _ in got] == pytest.approx([v for v, _ in want], rel=1e-12), name


def test_rank_metrics_on_mixed_scales_equal_their_values_on_the_ranks():
    """Magnitudes from 1e-300 to 1e300, both signs: an order-preserving map of the base scores."""
    scores, targets = base_trials()
    ranks = np.argsort(np.argsort(scores, kind="stable"), kind="stable").astype(np.float64)
    centred = (ranks - ranks.mean()) / ranks.std()
    mixed = np.sign(centred) * 10.0 ** (np.abs(centred) * 170 - 300)  # monotone: 1e-300 ... ~1e290
    assert np.isfinite(mixed).all() and len(set(mixed)) == len(set(ranks))
    for name in RANK_METRICS:
        assert [v for v, _ in values(name, mixed, targets)] == pytest.approx(
            [v for v, _ in values(name, ranks, targets)], rel=1e-12
        ), name


@pytest.mark.parametrize("case", ["near-max", "both-signs-max", "mixed", "subnormal", "ulps-apart"])
def test_linkability_on_extreme_scores_equals_the_exact_definition(case):
    scores, targets = base_trials(n=600, seed=3)
    # integer offsets 0..701: 701 is prime, so no offset lies exactly on a bin edge (as in any real data)
    offsets = np.round((scores - scores.min()) / (scores.max() - scores.min()) * 701)
    u = np.ldexp(1.0, 971)  # the spacing of floats near 1e308
    extreme = {
        "near-max": 1e308 + offsets * np.ldexp(1.0, 995),  # spread over ~1 % of 1e308
        "both-signs-max": scores / np.abs(scores).max() * 1.7e308,
        "mixed": np.sign(scores) * np.abs(scores) ** 60 * 1e-300,
        "subnormal": offsets * np.ldexp(1.0, -1074),  # integers times the smallest subnormal
        # every score one of 702 floats next to each other above 1e308: np.linspace gave equal bin edges
        # here, zero-width bins and NaN
        "ulps-apart": 1e308 + offsets * u,
    }[case]
    assert np.isfinite(extreme).all()
    got = linkability(extreme, targets)
    assert math.isfinite(got.value), getattr(got, "reason", None)
    assert got.value == pytest.approx(exact_linkability(extreme, targets), abs=1e-9)


def test_linkability_with_under_two_bins_is_nan_with_the_reason():
    """Under 20 target trials give 0 or 1 bins: with one bin the trapezoid over bin centres is 0 whatever
    the scores (perfectly separated ones too), which is no measurement."""
    for n_targets in (9, 15):
        targets = np.array([True] * n_targets + [False] * 100)
        scores = np.where(targets, 10.0, 0.0) + np.arange(len(targets)) * 1e-3  # perfectly separated
        [(value, details)] = values("linkability", scores, targets)
        assert math.isnan(value)
        assert (
            "needs at least 2 bins" in details["reason"] and f"{n_targets} target (mated) trials" in details["reason"]
        )
    [(value, details)] = values("linkability", scores, targets, bins=5)  # enough bins when asked for
    assert value == pytest.approx(exact_linkability(scores, targets, n_bins=5), abs=1e-12) and "reason" not in details


@pytest.mark.parametrize("scale", [1e300, 1e306, 1e307, 5e307])
def test_cllr_of_huge_scores_is_the_exact_value_not_inf(scale):
    scores, targets = base_trials()
    huge = scores / np.abs(scores).max() * scale
    [(value, details)] = values("cllr", huge, targets)
    assert math.isfinite(value) and "reason" not in details
    assert value == pytest.approx(exact_cllr(huge, targets), rel=1e-9)


def test_cllr_above_the_largest_float_is_nan_with_the_reason():
    targets = np.array([True] * 50 + [False] * 50)
    scores = np.where(targets, -1.7e308, 1.7e308)  # every trial maximally wrong: Cllr ~ 2.5e308 bits
    [(value, details)] = values("cllr", scores, targets)
    assert math.isnan(value) and "above 1.8e308 bits" in details["reason"]


@pytest.mark.parametrize("scale", [1.0, np.ldexp(1.0, 1015), np.ldexp(1.0, -1060), 1e-320])
def test_every_score_metric_gives_a_value_or_a_reason(scale):
    scores, targets = base_trials(n=300, seed=5)
    for name in SCORE_METRICS:
        for value, details in values(name, scores * scale, targets):
            assert math.isfinite(value) or ("reason" in details and details["reason"]), (name, scale, value, details)


def test_gvd_on_raw_llrs_near_1e308_equals_the_exact_block_means():
    """calibrate: false reads the scores as LLRs; their sums per speaker pair overflowed (and inf x 0 in
    the one-hot projections gave NaN). The similarity is the sigmoid of each block's exact mean."""
    from vpeval_scoring.gvd import speaker_similarity

    rng = np.random.default_rng(2)
    speakers = np.repeat(np.arange(4), 3).astype(str)
    same = speakers[:, None] == speakers[None, :]
    llr = np.where(same, 1.0, -1.0) * rng.uniform(0.5, 1.0, same.shape) * 1.5e308
    sim = speaker_similarity(llr, speakers, speakers, calibrated=False)
    for i, a in enumerate(sim.speakers):
        for j, b in enumerate(sim.speakers):
            block = llr[np.ix_(speakers == a, speakers == b)].ravel()
            mean = float(sum(Fraction(x) for x in block) / len(block))
            assert sim.matrix[i, j] == (1.0 if mean > 0 else 0.0)
    inputs = {p: SimilarityMatrix(llr * k, speakers, speakers) for p, k in (("O-O", 1.0), ("A-A", 0.5))}
    [result] = metric("gvd", calibrate=False).compute(MetricInputs(similarity=inputs))
    assert math.isfinite(result.value)


@pytest.mark.parametrize("scale", [np.ldexp(1.0, 1000), np.ldexp(1.0, -1000)])
def test_cosine_similarity_of_huge_and_tiny_embeddings(scale):
    """The inversion metric's CosSim: norms of entries near 1e308 overflowed (CosSim 0), near 1e-308
    underflowed under the 1e-12 floor. Rescaled embeddings have the same cosines."""
    rng = np.random.default_rng(4)
    a = rng.normal(size=(20, 8))
    b = a + rng.normal(size=(20, 8))
    assert cos_sim(a * scale, b * scale) == pytest.approx(cos_sim(a, b), rel=1e-12)


def test_the_report_says_why_a_cell_is_n_a():
    """A metric's NaN reaches report.md as n/a with its reason under the table (results.json rows hold
    None for NaN, as the runner writes them)."""
    from vpeval.report.tables import attack_tables

    targets = np.array([True] * 15 + [False] * 100)
    [result] = metric("linkability").compute(MetricInputs(scores=Scores(np.arange(115.0), targets)))
    row = {
        "metric": result.metric,
        "anonymizer": "mcadams",
        "attacker": "ge2e",
        "scenario": "original",
        "protocol": "O-A",
        "n": 1,
        "gender": result.gender,
        "value": None if math.isnan(result.value) else result.value,
        "unit": result.unit,
        "details": result.details,
    }
    (table,) = attack_tables([row])
    assert "| mcadams | ge2e | original | n/a |" in table
    assert "n/a: linkability is undefined here: 15 target (mated) trials give 1 histogram bin" in table
