"""Entry point: registers the embedding-tsne metric."""

from vpeval import hookimpl


@hookimpl
def register_metrics(register):
    from vpeval_embedding_tsne.metric import EmbeddingTsne

    register(EmbeddingTsne)
