SYMBOLS = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
           (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(n):
    """Roman numeral of a positive integer."""
    out = ""
    for value, sym in SYMBOLS:
        while n >= value:  # @mutate
            out += sym
            n -= value
    return out
