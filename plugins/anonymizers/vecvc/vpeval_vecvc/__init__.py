"""vpeval-vecvc: speak an utterance's content with a continuous pseudo-speaker vector."""
