/** The numbers from start (included) to end (excluded), step apart. */
export function range(start, end, step = 1) {
  const out = [];
  for (let i = start; i < end; i += step) out.push(i); // @mutate
  return out;
}

/** The sum of a list of numbers. */
export function sum(xs) {
  let total = 0;
  for (const x of xs) total = total + x; // @mutate
  return total;
}
