"""vpeval: a plugin-based evaluation platform for speaker anonymization."""

from vpeval.hookspecs import hookimpl

__all__ = ["hookimpl", "__version__"]
__version__ = "0.1.0"
