// The calculator tool's parser: a table of expressions and their values, and of inputs it refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { calculate, formatNumber, CalculatorError } from '../../src/env/calculator.ts';

test('the calculator evaluates arithmetic with the usual precedence', () => {
  const table: [string, number][] = [
    ['1 + 2', 3], ['417 + 385', 802], ['7 - 10', -3], ['6 * 7', 42], ['84 / 4', 21], ['2 + 3 * 4', 14], ['(2 + 3) * 4', 20],
    ['-3 + 5', 2], ['2 ^ 10', 1024], ['2 ** 3 ** 2', 512], ['-2 ^ 2', -4], ['17 % 5', 2], ['1.5 * 4', 6], ['.5 + .25', 0.75],
    ['12 × 3', 36], ['12 ÷ 4', 3], ['1,000 + 1', 1001], ['  ( ( 1 ) )  ', 1], ['1e3 / 8', 125],
  ];
  for (const [e, v] of table) assert.equal(calculate(e), v, e);
});

test('the calculator refuses anything but arithmetic, with a message', () => {
  for (const e of ['', '1 +', '2 * (3', 'process.exit()', '1 / 0', '5 % 0', 'a + 1', '1 2', '9 ^ 999', '('.repeat(70) + '1' + ')'.repeat(70), '1+'.repeat(300) + '1']) {
    assert.throws(() => calculate(e), CalculatorError, e);
  }
});

test('numbers print as integers or to ten significant digits', () => {
  assert.equal(formatNumber(42), '42');
  assert.equal(formatNumber(1 / 3), '0.3333333333');
  assert.equal(formatNumber(0.1 + 0.2), '0.3');
});
