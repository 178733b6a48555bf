"""The privacy gate: is the attacker strong enough on original speech for its privacy figures to count?"""
