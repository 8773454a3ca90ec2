// @ts-check
// The live stream: GET /api/sync read with fetch (EventSource cannot send Authorization),
// parsed as server-sent events, reconnected with back-off and Last-Event-ID; a `resync`
// (or a reconnect that cannot resume) tells the screens to rescan.
import { accessToken, refresh } from './api.js';
import { emit, state } from './state.js';

/** @type {AbortController | null} */
let controller = null;
let lastId = '';

export function startSync() {
  stopSync();
  controller = new AbortController();
  run(controller.signal);
}

export function stopSync() {
  controller?.abort();
  controller = null;
  state.live = false;
}

/** @param {AbortSignal} signal */
async function run(signal) {
  let delay = 1000;
  while (!signal.aborted) {
    try {
      /** @type {Record<string, string>} */
      const headers = { Accept: 'text/event-stream', Authorization: `Bearer ${accessToken()}` };
      if (lastId) headers['Last-Event-ID'] = lastId;
      const resp = await fetch('/api/sync', { headers, signal, credentials: 'same-origin' });
      if (resp.status === 401) {
        if (!(await refresh())) return;
        continue;
      }
      if (!resp.ok || !resp.body) throw new Error(`sync ${resp.status}`);
      setLive(true);
      delay = 1000;
      await read(resp.body, signal);
    } catch {
      if (signal.aborted) return;
    }
    setLive(false);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 30000);
  }
}

/** @param {boolean} live */
function setLive(live) {
  if (state.live !== live) {
    state.live = live;
    emit('live', live);
  }
}

/** @param {ReadableStream<Uint8Array>} body @param {AbortSignal} signal */
async function read(body, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  /** @type {{event: string, data: string[], id: string}} */
  let ev = { event: '', data: [], id: '' };
  while (!signal.aborted) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line === '') {
        dispatch(ev);
        ev = { event: '', data: [], id: '' };
      } else if (!line.startsWith(':')) {
        const at = line.indexOf(':');
        const field = at < 0 ? line : line.slice(0, at);
        const val = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
        if (field === 'event') ev.event = val;
        else if (field === 'data') ev.data.push(val);
        else if (field === 'id') ev.id = val;
      }
    }
  }
}

/** @param {{event: string, data: string[], id: string}} ev */
function dispatch(ev) {
  if (!ev.data.length) return;
  if (ev.id) lastId = ev.id;
  let data;
  try {
    data = JSON.parse(ev.data.join('\n'));
  } catch {
    return;
  }
  const type = ev.event || data.type;
  emit(type === 'resync' ? 'resync' : 'sync', data);
}
