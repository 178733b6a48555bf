"""Entry point: registers the selection, ohnn and emotion-compensation anonymizers and the embedding-privacy metric."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_embedding_anonymizers.compensation import EmotionCompensation
    from vpeval_embedding_anonymizers.ohnn import OHNNAnonymizer
    from vpeval_embedding_anonymizers.selection import Selection

    register(Selection)
    register(OHNNAnonymizer)
    register(EmotionCompensation)


@hookimpl
def register_metrics(register):
    from vpeval_embedding_anonymizers.privacy_metric import EmbeddingPrivacy

    register(EmbeddingPrivacy)
