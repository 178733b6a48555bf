"""Entry point: registers the embedding-view attacker (numpy only; the viewed attacker comes through the core)."""

from vpeval import hookimpl


@hookimpl
def register_attackers(register):
    from vpeval_embedding_view.attacker import EmbeddingView

    register(EmbeddingView)
