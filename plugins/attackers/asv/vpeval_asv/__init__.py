"""vpeval-asv: ECAPA-TDNN and x-vector attackers trained in vpeval, and their speaker encoders."""
