"""espeak-ng through ctypes in a helper process: a library for vpeval plugins (no entry points)."""
