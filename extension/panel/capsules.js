// Timecode capsules: in an answer that follows a video record, "12:34" becomes a button named
// "Seek to 12:34" that moves the video in its tab (the worker's `video.seek`).
//
// Rules:
// 1. Only answers that follow a video record get capsules, and they seek THAT video (the nearest
//    video record before the answer).
// 2. Timestamps in code (inline or blocks), in links and in existing buttons stay plain text.
// 3. What counts as a timestamp is `findTimecodes` (timecodes.js, tested against a corpus).

import { el, svg } from "../common/ui_common.js";
import { t } from "../common/i18n.js";
import { findTimecodes } from "./timecodes.js";

const SKIP = "pre, code, a, button, kbd, samp";

export function addCapsules(root, videoIndex) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement?.closest(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) nodes.push(node);
  let count = 0;
  for (const node of nodes) {
    const text = node.nodeValue;
    const found = findTimecodes(text);
    if (!found.length) continue;
    const pieces = [];
    let at = 0;
    for (const code of found) {
      if (code.start > at) pieces.push(text.slice(at, code.start));
      pieces.push(capsule(code, videoIndex));
      at = code.end;
    }
    if (at < text.length) pieces.push(text.slice(at));
    node.replaceWith(...pieces);
    count += found.length;
  }
  return count;
}

function capsule(code, videoIndex) {
  return el(
    "button",
    {
      type: "button",
      class: "capsule",
      "aria-label": t("panel_seek_to", code.label),
      title: t("panel_seek_hint", code.label),
      dataset: { action: "seek", seconds: String(code.seconds), video: String(videoIndex) },
    },
    svg("play"),
    el("span", { text: code.label }),
  );
}
