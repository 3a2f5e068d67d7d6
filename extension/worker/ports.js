// The work a page starts on a port: one port per turn, per summary pass, per backup; its events
// streamed back (docs/protocol.md). chrome.runtime.onConnect's listener, registered by
// background.js.
//
// Rules:
// 1. Only the extension's own pages may open a port (routing.js rule 1), and only of a known name.
// 2. A start message too large for one port message (a turn with several big images) comes in
//    pieces (extension/common/port_chunks.js); the work starts once all of them arrived, in
//    arrival order (routing.js rule 3).
// 3. Closing the port is a stop too. Only work that started and has not finished can be stopped;
//    Python remembers a stop that arrives before the work's task runs.
// 4. A port's data goes to Python as UTF-8 bytes: Pyodide converts a JS string argument at
//    ~11 MB/s, a Uint8Array at memory speed.
// 5. The work reports every failure of its own; what a port reports here is Pyodide failing, or
//    Python failing to start, as one error event.

import { CONTRACT } from '../generated/contract.js';
import { joinPieces } from '../common/port_chunks.js';
import * as i18n from '../common/i18n.js';
import { python } from './boot.js';
import { openPorts, postPortEvent } from './port_registry.js';
import { BootFailed, inArrivalOrder, senderTier } from './routing.js';

const utf8 = new TextEncoder(); // rule 4

const postPortError = (portId, code, message) =>
  postPortEvent(portId, JSON.stringify({ event: 'error', error: { code, message } }));

// What each port name runs (py/margin/app/worker.py), how its panel says stop, and what a failure is
// said to interrupt.
const PORT_KINDS = {
  [CONTRACT.turnPort]: {
    run: (worker, id, startJson) => worker.run_turn_json(id, startJson),
    stop: (worker, id) => worker.stop_turn(id),
    isStop: (message) => message?.action === 'stop',
    // A code run's result for the model's run_python call (py/margin/sandbox/tool_turn.py); keepalives are not.
    forward: (worker, id, messageJson) => worker.turn_message(id, messageJson),
    forwards: (message) => message?.action === 'tool_result',
    during: 'during this answer',
    failedKey: 'bg_error_turn',
  },
  [CONTRACT.summaryPort]: {
    run: (worker, id, startJson) => worker.run_summary_json(id, startJson),
    stop: (worker, id) => worker.stop_summary(id),
    isStop: (message) => message?.stop === true || message?.action === 'stop',
    during: 'while summarizing the page',
    failedKey: 'bg_error_summary',
  },
  // A backup's later messages (the file's chunks, acks) are its data: each goes to the running work.
  [CONTRACT.backupPort]: {
    run: (worker, id, startJson) => worker.run_backup_json(id, startJson),
    stop: (worker, id) => worker.stop_backup(id),
    isStop: (message) => message?.action === 'stop',
    forward: (worker, id, messageJson) => worker.backup_message(id, messageJson),
    during: 'during the backup',
    failedKey: 'bg_error_backup',
  },
};

export function onConnect(port) {
  const kind = Object.hasOwn(PORT_KINDS, port.name) ? PORT_KINDS[port.name] : null;
  if (!kind || senderTier(port.sender) !== 'extension') { // rule 1
    port.disconnect();
    return;
  }
  const portId = crypto.randomUUID();
  let started = false;
  let finished = false;
  const nextPiece = joinPieces(); // rule 2
  openPorts.set(portId, port);

  // Rule 3.
  const stop = () => {
    if (!started || finished) return;
    python().then(({ worker }) => kind.stop(worker, portId), () => {});
  };
  port.onDisconnect.addListener(() => {
    openPorts.delete(portId);
    stop();
  });

  port.onMessage.addListener(async (message) => {
    if (kind.isStop(message)) {
      stop();
      return;
    }
    if (started) {
      // A turn's keepalive: receiving it already reset the idle timer. A backup's data: forwarded.
      if (kind.forward && !finished && (!kind.forwards || kind.forwards(message))) {
        python().then(({ worker }) => kind.forward(worker, portId, utf8.encode(JSON.stringify(message ?? {}))), () => {});
      }
      return;
    }
    let startJson;
    try {
      startJson = nextPiece(message)?.json;
    } catch (error) {
      postPortError(portId, 'bad_message', i18n.t('bg_error_damaged', error.message));
      try { port.disconnect(); } catch { /* already gone */ }
      return;
    }
    if (startJson === undefined) return; // more pieces to come
    started = true;
    try {
      try {
        await inArrivalOrder((worker) => kind.run(worker, portId, utf8.encode(startJson)));
      } catch (error) {
        if (error instanceof BootFailed) {
          console.error('Margin: Python failed to start', error);
          postPortError(portId, 'python_boot_failed', i18n.t('bg_error_boot', error.message));
          return;
        }
        // Rule 5.
        console.error(`Margin: failed ${kind.during}`, error);
        postPortError(portId, 'internal', i18n.t(kind.failedKey, String(error?.message ?? error)));
      }
    } finally {
      finished = true;
      openPorts.delete(portId);
      try { port.disconnect(); } catch { /* already gone */ }
    }
  });
}
