"""WORLD-based F0 and formant shift anonymization (signal-processing voice modification)."""
