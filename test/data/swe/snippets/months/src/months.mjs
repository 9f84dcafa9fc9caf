/** Days in a month (1 = January); February has 29 days in a leap year. */
export function daysInMonth(month, leap) {
  if (month === 2) return leap ? 29 : 28; // @case
  if (month === 4 || month === 6 || month === 9 || month === 11) return 30; // @case @mutate
  return 31;
}
