"""Entry point: registers the score, similarity and inversion metrics (numpy and scipy only)."""

from vpeval import hookimpl


@hookimpl
def register_metrics(register):
    from vpeval_scoring.inversion_metric import Inversion
    from vpeval_scoring.score_metrics import EER, ZEBRA, Cllr, Linkability, MinCllr, MinDCF, RocchEER, StepEER
    from vpeval_scoring.similarity_metrics import GVD, DeID

    for cls in (StepEER, RocchEER, EER, MinDCF, Cllr, MinCllr, Linkability, ZEBRA, GVD, DeID, Inversion):
        register(cls)
