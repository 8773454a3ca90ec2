// @ts-check
// A QR code drawn in the browser (vendored qrcode-generator) as a data: image.
import { qrcode } from '../vendor/qrcode-generator-2.0.4.js';
import { h } from './dom.js';

/** @param {string} data @param {string} alt */
export function qrImage(data, alt) {
  const qr = qrcode(0, 'M');
  qr.addData(data, 'Byte');
  qr.make();
  return h('img', { class: 'qr', src: qr.createDataURL(6, 4), alt, dataset: { qr: data } });
}
