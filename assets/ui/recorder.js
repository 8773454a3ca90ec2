// @ts-check
// Voice notes recorded in the browser: MediaRecorder (Opus, in Ogg where the browser records
// it, else WebM: Chromium), the loudness sampled meanwhile for the waveform the other side's
// app draws, and the length measured here. Handed to `send` as a file with its duration (ms)
// and a waveform of at most 100 values from 0 to 1024.
import { h, replace } from './dom.js';
import { clock } from './media.js';
import { toast } from './notice.js';

/** Longest voice note: recording stops by itself here. */
const MAX_MS = 15 * 60 * 1000;
/** How often the loudness is sampled. */
const SAMPLE_MS = 50;
/** Values in the waveform sent. */
const WAVEFORM_POINTS = 100;

/** The recording type: Ogg/Opus where supported, else WebM/Opus, else the browser's choice. */
function recordingType() {
  for (const t of ['audio/ogg;codecs=opus', 'audio/webm;codecs=opus']) {
    if (MediaRecorder.isTypeSupported(t)) return t;
  }
  return '';
}

/**
 * `levels` (loudness samples) as at most WAVEFORM_POINTS integers 0–1024, the loudest 1024.
 * @param {number[]} levels
 */
export function waveform(levels) {
  if (!levels.length) return [];
  const n = Math.min(WAVEFORM_POINTS, levels.length);
  const buckets = Array.from({ length: n }, (_, i) => {
    const from = Math.floor((i * levels.length) / n);
    const to = Math.max(from + 1, Math.floor(((i + 1) * levels.length) / n));
    return Math.max(...levels.slice(from, to));
  });
  const peak = Math.max(...buckets);
  return buckets.map((v) => (peak > 0 ? Math.round(Math.min(1, v / peak) * 1024) : 0));
}

/**
 * The record button and, while recording, the time, "Stop and send" and "Cancel".
 * @param {(file: File, durationMs: number, waveform: number[]) => Promise<void>} send
 */
export function voiceRecorder(send) {
  const box = h('div', { class: 'recorder' });
  if (typeof MediaRecorder === 'undefined' || !navigator.mediaDevices?.getUserMedia) return box;
  const start = h('button', { type: 'button', class: 'secondary' }, 'Record a voice note');
  box.append(start);
  /** Ends a recording in progress without sending it (the conversation closes). */
  let cancel = () => {};
  box.addEventListener('release', () => cancel());

  start.addEventListener('click', async () => {
    /** @type {MediaStream} */
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (e) {
      toast(`The microphone cannot be used: ${e instanceof Error ? e.message : e}`, true);
      return;
    }
    const type = recordingType();
    const recorder = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
    /** @type {Blob[]} */
    const chunks = [];
    /** @type {number[]} */
    const levels = [];
    const audio = new AudioContext();
    const analyser = audio.createAnalyser();
    analyser.fftSize = 1024;
    audio.createMediaStreamSource(stream).connect(analyser);
    const samples = new Uint8Array(analyser.fftSize);
    const began = performance.now();
    const time = h('span', { role: 'status', class: 'recording' }, 'Recording 0:00');
    const timer = window.setInterval(() => {
      analyser.getByteTimeDomainData(samples);
      let sum = 0;
      for (const s of samples) sum += ((s - 128) / 128) ** 2;
      levels.push(Math.sqrt(sum / samples.length));
      const ms = performance.now() - began;
      time.textContent = `Recording ${clock(ms)}`;
      if (ms >= MAX_MS) stop(true);
    }, SAMPLE_MS);
    let keep = false;
    /** @param {boolean} send_ */
    const stop = (send_) => {
      keep = send_;
      window.clearInterval(timer);
      if (recorder.state !== 'inactive') recorder.stop();
    };
    recorder.addEventListener('dataavailable', (ev) => {
      if (ev.data.size) chunks.push(ev.data);
    });
    recorder.addEventListener('stop', async () => {
      const durationMs = Math.max(1, Math.round(performance.now() - began));
      cancel = () => {};
      for (const t of stream.getTracks()) t.stop();
      audio.close().catch(() => {});
      replace(box, start);
      if (!keep) return;
      const mime = recorder.mimeType || type || 'audio/webm';
      const ext = mime.includes('ogg') ? 'ogg' : 'webm';
      const file = new File(chunks, `Voice note.${ext}`, { type: mime });
      try {
        await send(file, durationMs, waveform(levels));
      } catch (e) {
        toast(e instanceof Error ? e.message : String(e), true);
      }
    });
    cancel = () => stop(false);
    recorder.start(250);
    replace(
      box,
      time,
      h('button', { type: 'button', onclick: () => stop(true) }, 'Stop and send'),
      h('button', { type: 'button', class: 'secondary', onclick: () => stop(false) }, 'Cancel'),
    );
  });
  return box;
}
