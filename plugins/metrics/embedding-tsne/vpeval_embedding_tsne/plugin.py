"""Entry point: registers the embedding-tsne metric, and the report that copies its maps into the run folder."""

from vpeval import hookimpl


@hookimpl
def register_metrics(register):
    from vpeval_embedding_tsne.metric import EmbeddingTsne

    register(EmbeddingTsne)


@hookimpl
def register_reports(register):
    from vpeval_embedding_tsne.report import TsneFigures

    register(TsneFigures)
