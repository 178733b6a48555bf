"""Voice transformation by vocal tract length normalisation (VTLN) frequency warping."""
