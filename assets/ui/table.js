// @ts-check
// A data table as every screen shows one: in its scrolling wrapper (`.tablewrap`, narrow
// screens scroll it sideways), one header row, then the body rows.
import { h } from './dom.js';

/**
 * A table of `rows` under `headers`. An empty header is the actions column: named for
 * screen readers only.
 * @param {string[]} headers
 * @param {import('./dom.js').Child | import('./dom.js').Child[]} rows the body's `<tr>` rows
 * @param {import('./dom.js').Attrs | null} [attrs] the `<table>`'s own attributes
 * @returns {HTMLDivElement}
 */
export function table(headers, rows, attrs = null) {
  return h(
    'div',
    { class: 'tablewrap' },
    h(
      'table',
      attrs,
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          headers.map((t) => h('th', null, t || h('span', { class: 'skip' }, 'Actions'))),
        ),
      ),
      h('tbody', null, rows),
    ),
  );
}
