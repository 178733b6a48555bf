"""Closed-set identification metrics: the rank of the true speaker among the enrolled population, its
top-k hit rates (CMC), mean rank and similarity rank disclosure (bits).

ranks and disclosure need only numpy and scipy and can be used without the plugin machinery.
"""
