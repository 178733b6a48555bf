"""embedding-tsne: t-SNE maps of utterance embeddings of original and anonymized speech (seed 003 Figures 4, 5)."""
