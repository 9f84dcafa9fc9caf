from lib.grade import grade

assert grade(95) == "A"
assert grade(90) == "A"
assert grade(89) == "B"
assert grade(80) == "B"
assert grade(79) == "C"
assert grade(70) == "C"
assert grade(69) == "F"
print("test_grade: ok")
