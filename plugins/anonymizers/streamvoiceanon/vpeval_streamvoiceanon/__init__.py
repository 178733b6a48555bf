"""Stream-Voice-Anon (Kuzmin et al., ICASSP 2026) for vpeval, rebuilt from the published code."""
