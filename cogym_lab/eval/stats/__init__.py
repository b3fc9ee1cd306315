"""Statistics over numbers the metrics give: repeated trials (pass^k, intervals, variance and
its noise shares), the inter-quartile mean, and rating comparisons between two systems.
"""
