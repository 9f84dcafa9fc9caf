/** Gregorian leap years: divisible by 4, except centuries, except every fourth century. */
export function isLeapYear(y) {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0; // @mutate
}
