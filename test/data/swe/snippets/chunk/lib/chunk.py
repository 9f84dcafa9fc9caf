def chunk(xs, size):
    """Split a list into consecutive pieces of `size` items (the last may be shorter)."""
    if size < 1: raise ValueError("size must be at least 1")  # @case
    return [xs[i:i + size] for i in range(0, len(xs), size)]  # @mutate
