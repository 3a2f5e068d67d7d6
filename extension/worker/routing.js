// Requests from the pages (chrome.runtime messages) to Python: who may ask what, and in which
// order requests reach Python.
//
// Rules:
// 1. Trust tiers (uBlock Origin Lite style): a sender from the extension's own pages is
//    'extension'; a content script in a web page is 'content' and may send only the requests
//    named with the contract's content-script prefix; anything else is refused.
// 2. Tier 1 works without Python (an unknown type, a forbidden sender); tier 2 needs it.
// 3. Arrival order: a request's listener runs when it arrives; `inArrivalOrder(start)` queues its
//    start there, synchronously, and once Python is up starts every queued request back to back,
//    oldest first, whatever path it came by (a message, a port) and however long the boot took.
//    Python keeps that order from there: each task starts in order and takes the storage lock
//    before anything else it awaits (py/margin/app/worker.py, rule 6). So a Save on the options page
//    followed by a send from the panel, in the first seconds of a cold worker, answers with the
//    saved provider.
// 4. A reply is always sent: a failure of the worker itself is {ok: false, error: internal}.

import { CONTRACT } from '../generated/contract.js';
import * as i18n from '../common/i18n.js';
import { python } from './boot.js';
import { syncSoon } from './sync.js';

const EXTENSION_ORIGIN = new URL(chrome.runtime.getURL('/')).origin;
const KNOWN_REQUESTS = new Set(CONTRACT.messages);

// -- rule 3 ----------------------------------------------------------------------------------

const arrivals = [];

export class BootFailed extends Error {}

export function inArrivalOrder(start) {
  return new Promise((resolve, reject) => {
    arrivals.push({ start, resolve, reject });
    if (arrivals.length === 1) startArrivals();
  });
}

async function startArrivals() {
  while (arrivals.length) {
    let worker;
    try {
      ({ worker } = await python());
    } catch (error) {
      for (const waiting of arrivals.splice(0)) waiting.reject(new BootFailed(error?.message ?? String(error)));
      return;
    }
    for (const waiting of arrivals.splice(0)) {
      try {
        waiting.resolve(waiting.start(worker));
      } catch (error) {
        waiting.reject(error);
      }
    }
  }
}

// -- rule 1 ----------------------------------------------------------------------------------

export function senderTier(sender) {
  if (sender.id !== chrome.runtime.id) return null;
  // The side panel, the options page and extension pages opened as tabs.
  if ((sender.url || '').startsWith(EXTENSION_ORIGIN + '/')) return 'extension';
  // Content scripts run inside web pages: their messages are untrusted input.
  return sender.tab ? 'content' : null;
}

const failure = (code, message) => ({ ok: false, error: { code, message } });

async function handleRequest(message, sender) {
  const tier = senderTier(sender);
  if (tier === null) return failure('forbidden', i18n.t('bg_error_foreign'));
  if (!message || typeof message !== 'object' || typeof message.type !== 'string') {
    return failure('bad_message', i18n.t('bg_error_no_type'));
  }
  const { type, payload } = message;
  // Tier 1: works without Python.
  if (!KNOWN_REQUESTS.has(type)) {
    return failure('unknown_message', i18n.t('bg_error_unknown', type));
  }
  if (tier === 'content' && !type.startsWith(CONTRACT.contentScriptPrefix)) {
    return failure('forbidden', i18n.t('bg_error_page_forbidden', type));
  }
  // Tier 2: needs Python.
  let replyJson;
  try {
    replyJson = await inArrivalOrder((worker) => worker.dispatch_json(type, JSON.stringify(payload ?? {}), tier));
  } catch (error) {
    if (!(error instanceof BootFailed)) throw error;
    console.error('Margin: Python failed to start', error);
    return failure('python_boot_failed', i18n.t('bg_error_boot', error.message));
  }
  const reply = JSON.parse(replyJson);
  if (type === 'session.new' && reply.ok) syncSoon(); // worker/sync.js rule 3
  return reply;
}

// chrome.runtime.onMessage's listener (registered by background.js). Rule 4.
export function onMessage(message, sender, sendResponse) {
  handleRequest(message, sender).then(sendResponse, (error) => {
    console.error('Margin: request failed', error);
    sendResponse(failure('internal', `Margin's background worker failed: ${error?.message ?? error}`));
  });
  return true; // the reply is sent asynchronously
}
