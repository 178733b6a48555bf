"""CPU-ready speech-token frontends built on packaged pretrained parts (seed 002's interfaces)."""
