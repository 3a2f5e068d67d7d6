// Saved prompts in the right-click menu (py/margin/settings/prompts.py): each prompt marked "Show
// in the right-click menu" is an item beside "Explain with Margin"; Chrome puts an extension's
// items under one parent named "Margin". A click runs as Explain does (worker/explain_menu.js).
//
// Rules:
// 1. The items are rebuilt from Python's list (`prompts.list`: names in the language setting) only
//    when Python is up anyway: at install or update, after a write of `prompts` (the options page's
//    save, a backup's import: worker/storage.js `onLocalWrite`), after a change of the language.
//    Chrome keeps the items across worker and browser restarts, so a start rebuilds nothing, and
//    no listener is added: browsing never wakes the worker for the menu.
// 2. A rebuild is removeAll, then Explain, then the prompts in the user's order; rebuilds run one
//    after another, so two quick saves leave the menu of the last one.
// 3. An item's id is `margin-prompt:<prompt id>` (`promptIdOf` reads it back for the click).
// 4. A prompt's name shows as typed (`menuTitle`): Chrome reads `%s` in a title as the selection
//    and `&` as a mnemonic marker (`&&` shows one `&`), and has no escape for `%s`, so a word
//    joiner (U+2060, invisible) is put between `%` and `s`.

import { CONTRACT } from '../generated/contract.js';
import { python } from './boot.js';

const ITEM_PREFIX = 'margin-prompt:';
const PROMPTS_KEY = CONTRACT.storage.keys.prompts;

export const promptIdOf = (menuItemId) =>
  typeof menuItemId === 'string' && menuItemId.startsWith(ITEM_PREFIX) ? menuItemId.slice(ITEM_PREFIX.length) : null;

// Rule 4.
export const menuTitle = (name) => String(name).replaceAll('&', '&&').replaceAll('%s', '%\u2060s');

const created = (resolve) => () => {
  if (chrome.runtime.lastError) console.warn('Margin: a menu item was not created:', chrome.runtime.lastError.message);
  resolve();
};

async function menuPrompts() {
  const { worker } = await python();
  const reply = JSON.parse(await worker.dispatch_json('prompts.list', '{}', 'extension'));
  if (!reply.ok) throw new Error(reply.error?.message || 'prompts.list failed');
  return reply.value.prompts.filter((prompt) => prompt.menu && !prompt.hidden);
}

// Rule 2. `createExplain(done)` creates "Explain with Margin" (worker/explain_menu.js).
let rebuilding = Promise.resolve();
export function rebuildMenu(createExplain) {
  rebuilding = rebuilding.then(async () => {
    let prompts = [];
    try {
      prompts = await menuPrompts();
    } catch (error) {
      console.warn('Margin: the saved prompts could not be read for the right-click menu', error);
    }
    try {
      await chrome.contextMenus.removeAll();
      await new Promise((resolve) => createExplain(resolve));
      for (const prompt of prompts) {
        await new Promise((resolve) =>
          chrome.contextMenus.create({ id: ITEM_PREFIX + prompt.id, title: menuTitle(prompt.name), contexts: ['selection'] }, created(resolve)));
      }
    } catch (error) {
      console.warn('Margin: the prompts of the right-click menu were not rebuilt', error);
    }
  });
  return rebuilding;
}

// Rule 1: what worker/storage.js says Python wrote.
export function promptsWritten(items, createExplain) {
  if (PROMPTS_KEY in items) rebuildMenu(createExplain);
}
