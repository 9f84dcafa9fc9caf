def can_withdraw(balance, amount, limit):
    """A withdrawal is allowed when it is positive and stays within the balance plus the overdraft limit."""
    return amount > 0 and amount <= balance + limit  # @mutate
