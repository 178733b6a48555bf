"""Self-supervised speech models as frontends: WavLM (incl. UniLM's WavLM-Large.pt), HuBERT, wav2vec 2.0."""
