"""The WORLD vocoder (pyworld) for vpeval plugins: a library without entry points."""
