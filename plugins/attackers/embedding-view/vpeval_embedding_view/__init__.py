"""embedding-view: another attacker, unchanged, whose per-utterance representations reach the embedding metrics."""
