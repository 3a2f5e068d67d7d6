// "Explain with Margin" on a selection: the context menu item, its title in the language setting,
// and its click, which opens the panel and queues the request for it (py/margin/turn/explain.py).
//
// Rules:
// 1. The item is created once per install (Chrome keeps it between worker starts): `createMenu`
//    on onInstalled; a "duplicate id" after an update that kept the item brings its title up to date.
// 2. Its title follows the language setting (extension/common/i18n.js): Chrome's i18n cannot switch
//    at run time. A start brings it up to the setting; a change while the worker runs, at once.
// 3. The click listener is registered at top level by background.js like every other, and fires
//    only on a user's click. sidePanel.open() needs the click's user gesture, so it is called
//    before anything is awaited.
// 4. The panel picks the request up from chrome.storage.session and runs the turn.
// 5. A saved prompt's item (worker/prompt_menu.js) is clicked the same way; its request carries
//    the prompt's id (py/margin/turn/explain.py, rule 5).

import * as i18n from '../common/i18n.js';
import { python } from './boot.js';
import { promptIdOf, promptsWritten, rebuildMenu as rebuildWithPrompts } from './prompt_menu.js';

const EXPLAIN_MENU_ID = 'margin-explain';

export const retitleMenu = () =>
  chrome.contextMenus.update(EXPLAIN_MENU_ID, { title: i18n.t('bg_explain') }, () => void chrome.runtime.lastError);

// Rule 1.
export function createMenu(done = () => {}) {
  chrome.contextMenus.create({ id: EXPLAIN_MENU_ID, title: i18n.t('bg_explain'), contexts: ['selection'] }, () => {
    if (chrome.runtime.lastError) retitleMenu();
    done();
  });
}

// Explain and the saved prompts' items (rule 5), at install and when the language changes.
export const rebuildMenu = () => rebuildWithPrompts(createMenu);
// At install: Explain at once, the prompts once Python answers (it boots at install anyway).
export function installMenu() {
  createMenu();
  return rebuildMenu();
}
export const followPromptWrites = (items) => promptsWritten(items, createMenu);

// chrome.contextMenus.onClicked's listener (rule 3).
export function onExplainClicked(info, tab) {
  const promptId = promptIdOf(info.menuItemId);
  if (info.menuItemId !== EXPLAIN_MENU_ID && promptId === null) return;
  const where = tab?.windowId !== undefined && tab.windowId >= 0 ? { windowId: tab.windowId } : { tabId: tab?.id };
  try {
    chrome.sidePanel.open(where).catch((error) => console.warn('Margin: could not open the side panel', error));
  } catch (error) {
    console.warn('Margin: could not open the side panel', error);
  }
  // srcUrl, frameUrl: what tells a selection in Chrome's PDF viewer (py/margin/turn/explain.py, rule 4).
  const request = {
    selectionText: info.selectionText,
    pageUrl: info.pageUrl || tab?.url || '',
    frameUrl: info.frameUrl || '',
    srcUrl: info.srcUrl || '',
    title: tab?.title || '',
  };
  if (promptId !== null) request.promptId = promptId; // rule 5
  // Rule 4.
  return python()
    .then(({ worker }) => worker.explain_queue_json(JSON.stringify(request)))
    .then((replyJson) => {
      const reply = JSON.parse(replyJson);
      if (!reply.ok) console.warn('Margin: Explain was not queued:', reply.error?.message);
      return reply;
    })
    .catch((error) => console.error('Margin: Explain failed', error));
}
