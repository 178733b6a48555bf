"""vpeval executor on Dask (see README.md)."""
