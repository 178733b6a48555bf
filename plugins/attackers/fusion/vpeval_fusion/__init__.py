"""The fusion attacker: other attackers' scores combined by calibrated logistic regression."""
