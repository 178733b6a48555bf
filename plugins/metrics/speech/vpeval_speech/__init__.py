"""Speech metrics for vpeval: WER (through an ASR plugin), emotion UAR and pitch correlation."""
