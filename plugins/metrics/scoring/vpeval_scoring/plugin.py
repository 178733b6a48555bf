"""Entry point: registers the score, similarity and inversion metrics (numpy and scipy only)."""

from vpeval import hookimpl


@hookimpl
def register_metrics(register):
    from vpeval_scoring.inversion_metric import Inversion
    from vpeval_scoring.per_speaker_eer import PerSpeakerEER
    from vpeval_scoring.score_metrics import EER, ZEBRA, Cllr, Linkability, MinCllr, MinDCF, RocchEER, StepEER
    from vpeval_scoring.similarity_metrics import GVD, DeID
    from vpeval_scoring.tpr_at_fpr import TPRAtFPR

    for cls in (
        StepEER,
        RocchEER,
        EER,
        MinDCF,
        Cllr,
        MinCllr,
        Linkability,
        ZEBRA,
        GVD,
        DeID,
        Inversion,
        PerSpeakerEER,
        TPRAtFPR,
    ):
        register(cls)
