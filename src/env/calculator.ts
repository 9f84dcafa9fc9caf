// The `calculator` tool: arithmetic expressions parsed by a small recursive-descent parser (no eval),
// so nothing but + − × ÷ %, powers, parentheses and numbers can run. Pure.
//
//   expr   := term (('+' | '-') term)*
//   term   := unary (('*' | '/' | '%') unary)*
//   unary  := ('-' | '+') unary | power
//   power  := atom ('^' | '**') unary | atom
//   atom   := number | '(' expr ')'

export class CalculatorError extends Error { override name = 'CalculatorError'; }

const MAX_LENGTH = 500;

export function calculate(expression: string): number {
  if (typeof expression !== 'string') throw new CalculatorError('expression must be a string');
  if (expression.length > MAX_LENGTH) throw new CalculatorError(`expression longer than ${MAX_LENGTH} characters`);
  const src = expression.replace(/[×x]/g, '*').replace(/÷/g, '/').replace(/−/g, '-').replace(/,(?=\d{3}\b)/g, '');
  let i = 0;
  const skip = () => { while (i < src.length && /\s/.test(src[i])) i++; };
  const peek = (s: string) => { skip(); return src.startsWith(s, i); };
  const eat = (s: string) => { if (peek(s)) { i += s.length; return true; } return false; };
  let depth = 0;
  const atom = (): number => {
    skip();
    if (eat('(')) {
      if (++depth > 64) throw new CalculatorError('parentheses nested too deeply');
      const v = expr();
      if (!eat(')')) throw new CalculatorError(`expected ')' at position ${i}`);
      depth--;
      return v;
    }
    const m = /^(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/.exec(src.slice(i));
    if (!m) throw new CalculatorError(i >= src.length ? 'unexpected end of expression' : `unexpected '${src[i]}' at position ${i}`);
    i += m[0].length;
    return Number(m[0]);
  };
  const power = (): number => {
    const base = atom();
    if (eat('**') || eat('^')) return base ** unary();
    return base;
  };
  const unary = (): number => {
    if (eat('-')) return -unary();
    if (eat('+')) return unary();
    return power();
  };
  const term = (): number => {
    let v = unary();
    for (;;) {
      if (peek('**')) return v;
      if (eat('*')) v *= unary();
      else if (eat('/')) { const d = unary(); if (d === 0) throw new CalculatorError('division by zero'); v /= d; }
      else if (eat('%')) { const d = unary(); if (d === 0) throw new CalculatorError('modulo by zero'); v %= d; }
      else return v;
    }
  };
  const expr = (): number => {
    let v = term();
    for (;;) {
      if (eat('+')) v += term();
      else if (eat('-')) v -= term();
      else return v;
    }
  };
  const v = expr();
  skip();
  if (i < src.length) throw new CalculatorError(`unexpected '${src[i]}' at position ${i}`);
  if (!Number.isFinite(v)) throw new CalculatorError('the result is not a finite number');
  return v;
}

/** A number as the calculator prints it: integers plainly, others to 10 significant digits. */
export function formatNumber(v: number): string {
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(10)));
}
