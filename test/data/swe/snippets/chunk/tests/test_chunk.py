from lib.chunk import chunk

assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
assert chunk([1, 2, 3], 3) == [[1, 2, 3]]
assert chunk([], 4) == []
for bad in (0, -1):
    try:
        chunk([1, 2], bad)
        raise SystemExit("chunk accepted a size below 1")
    except ValueError as e:
        assert str(e) == "size must be at least 1", str(e)
print("test_chunk: ok")
