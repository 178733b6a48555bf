"""vpeval hook implementations of vpeval-synth (imports nothing heavy)."""

from vpeval import hookimpl


@hookimpl
def register_corpora(register):
    from vpeval_synth.source import SynthCorpus

    register(SynthCorpus)
