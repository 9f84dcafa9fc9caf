def grade(score):
    """Letter grade: 90 and above is A, 80 and above B, 70 and above C, else F."""
    if score >= 90:  # @mutate
        return "A"
    if score >= 80:  # @mutate
        return "B"
    if score >= 70:  # @mutate
        return "C"
    return "F"
