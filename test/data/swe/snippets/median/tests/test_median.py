from lib.median import median

assert median([3, 1, 2]) == 2
assert median([4, 1, 3, 2]) == 2.5
assert median([7]) == 7
assert median([1, 10]) == 5.5
assert median([]) is None
print("test_median: ok")
