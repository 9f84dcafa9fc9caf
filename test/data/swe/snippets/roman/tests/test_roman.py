from lib.roman import to_roman

assert to_roman(1) == "I"
assert to_roman(4) == "IV"
assert to_roman(9) == "IX"
assert to_roman(14) == "XIV"
assert to_roman(1994) == "MCMXCIV"
print("test_roman: ok")
