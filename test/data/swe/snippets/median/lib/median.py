def median(xs):
    """The median of a list of numbers; None for an empty list."""
    s = sorted(xs)
    if not s: return None  # @case
    n = len(s)
    mid = n // 2
    if n % 2 == 1:  # @mutate
        return s[mid]
    return (s[mid - 1] + s[mid]) / 2  # @mutate
