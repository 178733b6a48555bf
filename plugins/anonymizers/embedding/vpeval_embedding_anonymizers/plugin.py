"""Entry point: registers the selection, ohnn and emotion-compensation anonymizers."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_embedding_anonymizers.compensation import EmotionCompensation
    from vpeval_embedding_anonymizers.ohnn import OHNNAnonymizer
    from vpeval_embedding_anonymizers.selection import Selection

    register(Selection)
    register(OHNNAnonymizer)
    register(EmotionCompensation)
