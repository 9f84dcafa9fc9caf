/** How many pages `items` items fill at `perPage` per page (an empty list still shows one page). */
export function pageCount(items, perPage) {
  if (items === 0) return 1; // @case
  return Math.floor((items + perPage - 1) / perPage); // @mutate
}

/** The items of page `page` (numbered from 1). */
export function pageSlice(list, page, perPage) {
  const start = (page - 1) * perPage; // @mutate
  return list.slice(start, start + perPage); // @mutate
}
