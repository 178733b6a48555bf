"""vpeval-multiutt: the multi-utterance, multimodal speaker verification attacker of seed 000."""
