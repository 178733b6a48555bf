"""vpeval-synth: the built-in generated multi-speaker corpus `synth` (espeak-ng, GPL-3.0)."""
