// @ts-check
// Small DOM builder: data always goes in as text nodes or attributes, never as HTML.

/**
 * @typedef {Node | string | number | null | undefined | false} Child
 * @typedef {Record<string, any>} Attrs
 */

/**
 * `h('button', {class: 'x', onclick: fn, 'aria-label': 'Close'}, 'text', otherNode)`.
 * `on<event>` keys become listeners; `dataset` an object; booleans set/omit the attribute.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag @param {Attrs | null} [attrs] @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' && 'value' in el) /** @type {any} */ (el).value = v;
    else if (k === 'checked' || k === 'disabled' || k === 'hidden' || k === 'selected')
      /** @type {any} */ (el)[k] = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** @param {Node} el @param {(Child | Child[])[]} children */
export function append(el, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. @param {Element} el @param {...(Child | Child[])} children */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled input: `<label>Text <input …></label>`. @param {string} text @param {Attrs} attrs */
export function field(text, attrs) {
  const input =
    attrs.tag === 'textarea'
      ? h('textarea', { ...attrs, tag: null })
      : attrs.tag === 'select'
        ? h(
            'select',
            { ...attrs, tag: null },
            ...(attrs.options || []).map((/** @type {[string,string]} */ [v, t]) =>
              h('option', { value: v, selected: v === attrs.value }, t),
            ),
          )
        : h('input', attrs);
  return h('label', { class: 'field' }, h('span', null, text), input);
}

/** A short "12:04" / "Mon" / "3 Mar" for a timestamp. @param {number | string | null | undefined} t */
export function when(t) {
  if (t === null || t === undefined) return '';
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return '';
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (now.getTime() - d.getTime() < 6 * 864e5) return d.toLocaleDateString([], { weekday: 'short' });
  return d.toLocaleDateString([], { day: 'numeric', month: 'short' });
}

/** Full date and time for titles. @param {number | string | null | undefined} t */
export function fullTime(t) {
  if (t === null || t === undefined) return '';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleString();
}
