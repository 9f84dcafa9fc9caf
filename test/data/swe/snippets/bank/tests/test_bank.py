from lib.bank import can_withdraw

assert can_withdraw(100, 0, 0) is False
assert can_withdraw(100, 100, 0) is True
assert can_withdraw(100, 120, 20) is True
assert can_withdraw(100, 121, 20) is False
assert can_withdraw(50, 60, 0) is False
assert can_withdraw(-5, 10, 20) is True
print("test_bank: ok")
