def clamp(x, lo, hi):
    """Limit x to the closed range [lo, hi]."""
    return max(lo, min(x, hi))  # @mutate
