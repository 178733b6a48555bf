"""vpeval-sslsas: speech from a pseudo-speaker vector with the SSL-SAS generator (Miao et al. 2022)."""
