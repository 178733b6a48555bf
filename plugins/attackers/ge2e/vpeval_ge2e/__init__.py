"""vpeval-ge2e: the pretrained GE2E d-vector encoder that resemblyzer carries, as an encoder and an attacker."""
