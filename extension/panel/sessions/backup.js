// The whole backup over the worker's backup port (docs/protocol.md, "A backup"): the file streams
// in chunks both ways, so its size is not bound by Chrome's 64 MiB per message.
//
// API: exportBackup({includeApiKeys, onProgress}) -> Promise<{blob, filename}>
//        the chunks are joined into a Blob in the page (each chunk becomes a Blob part at once,
//        so the strings can be freed); onProgress({sessions, total}) after each session.
//      importBackup(file, {onProgress}) -> Promise<result of docs/protocol.md>
//        the file is read as a stream of text (UTF-8) and sent one chunk per `more` the worker
//        asks; onProgress({bytes, size, sessions}) as it goes.
//   Both reject with an Error carrying `.code` and a `.message` a user can read.

import { CONTRACT } from "../../generated/contract.js";
import { PIECE_CHARS, splitText } from "../../common/port_chunks.js";
import { t } from "../../common/i18n.js";

const workerGone = () => t("sessions_backup_worker_gone");

class BackupError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// Opens the port and runs `onEvent` for each event until one settles the promise.
function backupPort(start, onEvent) {
  return new Promise((resolve, reject) => {
    let port;
    try {
      port = chrome.runtime.connect({ name: CONTRACT.backupPort });
    } catch (error) {
      reject(new BackupError("no_worker", `${workerGone()} (${error?.message || error})`));
      return;
    }
    let settled = false;
    const settle = (fn, value) => {
      if (settled) return;
      settled = true;
      try { port.disconnect(); } catch { /* already gone */ }
      fn(value);
    };
    port.onDisconnect.addListener(() => {
      void chrome.runtime.lastError;
      settle(reject, new BackupError("no_worker", workerGone()));
    });
    port.onMessage.addListener((message) => {
      if (message?.event === "error") {
        settle(reject, new BackupError(message.error?.code || "unknown", message.error?.message || workerGone()));
        return;
      }
      Promise.resolve(onEvent(message, port))
        .then((value) => { if (value !== undefined) settle(resolve, value); })
        .catch((error) => settle(reject, error instanceof BackupError ? error
          : new BackupError("file_unreadable", t("sessions_backup_unreadable", error?.message || error))));
    });
    port.postMessage(start);
  });
}

export function exportBackup({ includeApiKeys = false, onProgress = () => {} } = {}) {
  const parts = [];
  let head = null;
  return backupPort({ action: "export", includeApiKeys }, (message, port) => {
    switch (message?.event) {
      case "start":
        head = message;
        onProgress({ sessions: 0, total: message.sessions });
        return undefined;
      case "chunk":
        parts.push(new Blob([message.text]));
        port.postMessage({ ack: message.seq });
        return undefined;
      case "progress":
        onProgress({ sessions: message.sessions, total: message.total });
        return undefined;
      case "done":
        return { blob: new Blob(parts, { type: head?.mimeType || "application/json" }), filename: head?.filename || "margin-backup.json" };
      default:
        return undefined;
    }
  });
}

export function importBackup(file, { onProgress = () => {} } = {}) {
  let bytes = 0;  // of the file read so far
  const counted = new TransformStream({ transform(chunk, out) { bytes += chunk.byteLength; out.enqueue(chunk); } });
  const reader = file.stream().pipeThrough(counted).pipeThrough(new TextDecoderStream()).getReader();
  let queued = [];
  // The next chunk of text: decoded pieces gathered up to PIECE_CHARS (a decoded piece is
  // ~64 KiB; one that is larger is split), or null at the end of the file.
  async function nextChunk() {
    let text = queued.join("");
    queued = [];
    while (text.length < PIECE_CHARS) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    if (text.length > PIECE_CHARS) {
      const [first, ...rest] = splitText(text);
      queued = rest;
      text = first;
    }
    return text.length ? text : null;
  }
  let sessions = 0;
  return backupPort({ action: "import" }, async (message, port) => {
    switch (message?.event) {
      case "more": {
        const text = await nextChunk();
        port.postMessage(text === null ? { end: true } : { chunk: text });
        onProgress({ bytes: Math.min(bytes, file.size), size: file.size, sessions });
        return undefined;
      }
      case "progress":
        sessions = message.sessions;
        onProgress({ bytes: Math.min(bytes, file.size), size: file.size, sessions });
        return undefined;
      case "done":
        return message.result;
      default:
        return undefined;
    }
  }).finally(() => reader.cancel().catch(() => {}));
}
