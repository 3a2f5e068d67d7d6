// What a new worker instance picks up from the one before: the site caches (their purge
// listeners, py/margin/page/site_caches.py) and an unfinished backup import (py/margin/backup/stream.py).
// Both are started by background.js at top level, once per instance.
//
// Rules:
// 1. The site caches' purge listeners exist only while a tab is cached (tabs.js rule 3). If
//    nothing is cached, they are added and removed once, which clears a wake-up registration a
//    previous instance may have left behind; if something is, the cache is restored now (dead tabs
//    dropped, listeners back for the live ones). Their events go to Python (`followTabEvents`).
// 2. An import the previous instance was running when it stopped left its staged session bodies
//    listed: they are removed before anything else can see them.
// 3. Reading a key to decide is all that happens without Python; nothing here throws.

import { CONTRACT } from '../generated/contract.js';
import { python } from './boot.js';
import { setTabEventHandler, tabsWatch } from './tabs.js';

export function followTabEvents() {
  setTabEventHandler((kind, tabId, url) => {
    python()
      .then(({ worker }) => worker.site_cache_event(kind, tabId, url))
      .catch((error) => console.error('Margin: site cache purge failed', error));
  });
}

// Rule 1.
export function restoreSiteCaches() {
  const indexKey = CONTRACT.storage.sessionKeys.siteCacheIndex;
  chrome.storage.session.get(indexKey).then((stored) => {
    const index = stored[indexKey];
    if (index && typeof index === 'object' && Object.keys(index).length) {
      python().then(({ worker }) => worker.site_cache_restore()).catch((error) => console.error('Margin: site cache restore failed', error));
    } else {
      tabsWatch('{}', true);
    }
  }, (error) => console.warn('Margin: could not read the site cache index', error));
}

// Rule 2.
export function recoverBackupImport() {
  const stagingKey = CONTRACT.storage.keys.backupImportStaging;
  chrome.storage.local.get(stagingKey).then((stored) => {
    if (Object.hasOwn(stored, stagingKey)) {
      python().then(({ worker }) => worker.backup_recover()).catch((error) => console.error('Margin: backup clean-up failed', error));
    }
  }, (error) => console.warn('Margin: could not check for an unfinished import', error));
}
