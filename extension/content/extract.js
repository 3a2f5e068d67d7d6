// "Attach page": what the service worker injects into a tab, after vendor/Readability.js.
//
//   await chrome.scripting.executeScript({target: {tabId}, files: ["vendor/Readability.js", "content/extract.js"]});
//   const [{result}] = await chrome.scripting.executeScript({target: {tabId}, func: () => globalThis.__marginExtract()});
//
// Rules:
// 1. It runs in the content script's isolated world and never modifies the page: Readability and
//    the fallback work on `document.cloneNode(true)` (a document without a browsing context, so no
//    image loads and no custom element runs); videos are only read (a track's mode is never set).
// 2. Nothing here throws: every entry point catches everything and answers
//    `{ok: false, reason, detail}`. Every answer is plain JSON (strings, numbers, booleans, null).
// 3. A file the page names (a caption track) is read from here, by `__marginReadAsPage`, under the
//    page's own rules: this isolated world's fetch is made for the page's origin, so CORS, the
//    browser's private-network rules and every redirect are checked as for the page itself
//    (docs/security.md, "What a page names"). The service worker never fetches such a URL.
// 4. Injecting it twice is harmless: everything lives in one function scope and the globals are
//    simply assigned again. Loading it touches no DOM (node loads it to test the pure parts).
// 5. It is one file on purpose (a little over 400 lines): executeScript injects files, not
//    modules, so a split would be one more injection per attach for nothing.
//
// Globals: __marginExtract() (async, the page), __marginProbe() (cheap, "is it still the same
// page?"), __marginSeek(videoSrc, videoIndex, seconds), __marginReadAsPage(url, maxBytes,
// timeoutMs) (async, rule 3), and the pure helpers __marginJsonAt(text, startIndex) and
// __marginYouTubeFromScripts(scriptTexts, pageUrl); __marginSelection() (the selected text).

(() => {
  "use strict";

  const MAX_VIDEOS = 20;
  const MAX_TRACKS = 20;
  const MAX_CUES = 20000;
  const SELECTION_MAX_CHARS = 200000; // what a saved prompt's {{selection}} takes (py/margin/turn/explain.py's bound)
  const MIN_ARTICLE_CHARS = 200; // Readability's text must be at least this long to be used
  const MAX_SHADOW_SCAN = 30000; // elements looked at for open shadow roots (cheap pages only)
  const STRIPPED = "script,style,noscript,template,svg,iframe";
  const YOUTUBE_HOSTS = new Set(["youtube.com", "www.youtube.com", "m.youtube.com",
    "music.youtube.com", "www.youtube-nocookie.com", "youtube-nocookie.com"]);
  const PLAYER_RESPONSE = "ytInitialPlayerResponse";

  const errorText = (error) => {
    try {
      return String(error?.message || error);
    } catch (_) {
      return "unknown error";
    }
  };
  const collapse = (text) => String(text || "").replace(/\s+/g, " ").trim();
  const orNull = (value) => {
    const text = typeof value === "string" ? value.trim() : "";
    return text ? text : null;
  };
  const finiteOr = (value, fallback) => (typeof value === "number" && Number.isFinite(value) ? value : fallback);

  function absoluteUrl(value, base) {
    if (typeof value !== "string" || !value.trim()) return null;
    try {
      return new URL(value, base).href;
    } catch (_) {
      return null;
    }
  }

  // --- pure: one JSON value out of a longer text --------------------------------------------------

  // The JSON object or array that starts at text[startIndex] (leading whitespace skipped), as a
  // string, found by bracket matching that respects strings and backslash escapes; null when there
  // is no `{`/`[` there or its brackets never balance (or mismatch).
  function jsonAt(text, startIndex) {
    if (typeof text !== "string") return null;
    let i = Math.max(0, Math.floor(Number(startIndex) || 0));
    const n = text.length;
    while (i < n && /\s/.test(text[i])) i++;
    const first = text.charCodeAt(i);
    if (first !== 0x7b && first !== 0x5b) return null; // { [
    const start = i;
    const stack = [];
    let inString = false;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (c === 0x5c) i++; // backslash: the next code unit is escaped, whatever it is
        else if (c === 0x22) inString = false;
        continue;
      }
      if (c === 0x22) inString = true;
      else if (c === 0x7b) stack.push(0x7d); // { expects }
      else if (c === 0x5b) stack.push(0x5d); // [ expects ]
      else if (c === 0x7d || c === 0x5d) {
        if (stack.pop() !== c) return null;
        if (stack.length === 0) return text.slice(start, i + 1);
      }
    }
    return null;
  }

  // The parsed object assigned to `name` (`name = {...}`, `var name = {...}`,
  // `window["name"] = {...}`) in a script text, or undefined. Comparisons (`==`) are skipped.
  function assignedJson(text, name) {
    let from = 0;
    for (;;) {
      const at = text.indexOf(name, from);
      if (at < 0) return undefined;
      from = at + name.length;
      let i = from;
      if (text[i] === '"' || text[i] === "'") i++;
      if (text[i] === "]") i++;
      while (i < text.length && /\s/.test(text[i])) i++;
      if (text[i] !== "=" || text[i + 1] === "=") continue;
      const json = jsonAt(text, i + 1);
      if (json === null) continue;
      try {
        return JSON.parse(json);
      } catch (_) {
        // not JSON after all (a JS object literal): look for another assignment
      }
    }
  }

  function youtubeVideoIdFromUrl(pageUrl) {
    try {
      const url = new URL(pageUrl);
      const v = url.searchParams.get("v");
      if (v) return v;
      const path = url.pathname.match(/^\/(?:shorts|embed|live|v)\/([\w-]{6,})/);
      return path ? path[1] : null;
    } catch (_) {
      return null;
    }
  }

  function isYouTubeUrl(pageUrl) {
    try {
      return YOUTUBE_HOSTS.has(new URL(pageUrl).hostname);
    } catch (_) {
      return false;
    }
  }

  function trackName(name) {
    if (!name || typeof name !== "object") return "";
    if (typeof name.simpleText === "string") return name.simpleText;
    if (Array.isArray(name.runs)) return name.runs.map((run) => run?.text || "").join("");
    return "";
  }

  // YouTube's caption tracks from the page's inline script texts (pure). null when the page is
  // not a YouTube page or its URL names no video (watch?v=, /shorts/, /embed/, /live/). stale: true
  // when the inline player response is missing or is for another video (YouTube navigates in-app:
  // the inline script still describes the first video of the visit).
  function youtubeFromScripts(scriptTexts, pageUrl) {
    if (!isYouTubeUrl(pageUrl)) return null;
    const urlId = youtubeVideoIdFromUrl(pageUrl);
    if (!urlId) return null;
    let response;
    for (const text of scriptTexts || []) {
      if (typeof text !== "string" || text.indexOf(PLAYER_RESPONSE) < 0) continue;
      const found = assignedJson(text, PLAYER_RESPONSE);
      if (found && typeof found === "object") {
        response = found;
        break;
      }
    }
    const details = response?.videoDetails || {};
    const videoId = typeof details.videoId === "string" ? details.videoId : null;
    if (!response || videoId !== urlId) {
      return { videoId: urlId, captionTracks: [], title: null, lengthSeconds: null, stale: true };
    }
    const renderer = response.captions?.playerCaptionsTracklistRenderer || {};
    const tracks = Array.isArray(renderer.captionTracks) ? renderer.captionTracks : [];
    const length = Number(details.lengthSeconds);
    return {
      videoId,
      captionTracks: tracks.filter((t) => t && typeof t.baseUrl === "string").map((t) => ({
        baseUrl: absoluteUrl(t.baseUrl, pageUrl) || t.baseUrl,
        languageCode: typeof t.languageCode === "string" ? t.languageCode : "",
        name: trackName(t.name),
        kind: typeof t.kind === "string" ? t.kind : "",
      })),
      title: typeof details.title === "string" ? details.title : null,
      lengthSeconds: Number.isFinite(length) ? length : null,
      stale: false,
    };
  }

  // --- videos --------------------------------------------------------------------------------------

  // Every <video>, in document order, then those inside open shadow roots (skipped on huge pages).
  function collectVideos() {
    const videos = Array.from(document.getElementsByTagName("video"));
    const all = document.getElementsByTagName("*");
    if (all.length <= MAX_SHADOW_SCAN) {
      const roots = [];
      for (let i = 0; i < all.length; i++) if (all[i].shadowRoot) roots.push(all[i].shadowRoot);
      for (let r = 0; r < roots.length && r < 1000; r++) {
        const inner = roots[r].querySelectorAll("*");
        for (let i = 0; i < inner.length && i < MAX_SHADOW_SCAN; i++) {
          const node = inner[i];
          if (node.localName === "video") videos.push(node);
          if (node.shadowRoot) roots.push(node.shadowRoot);
        }
      }
    }
    return videos;
  }

  function videoSrc(video) {
    if (video.currentSrc) return video.currentSrc;
    if (video.src) return video.src;
    const source = video.querySelector("source[src]");
    return source ? absoluteUrl(source.getAttribute("src"), document.baseURI) : null;
  }

  function readCues(textTrack) {
    let cues = null;
    try {
      cues = textTrack ? textTrack.cues : null; // null while the track's mode is "disabled"
    } catch (_) {
      return { cues: null, truncated: false };
    }
    if (!cues) return { cues: null, truncated: false };
    const out = [];
    const count = Math.min(cues.length, MAX_CUES);
    for (let i = 0; i < count; i++) {
      const cue = cues[i];
      out.push({
        start: finiteOr(cue.startTime, 0),
        end: finiteOr(cue.endTime, finiteOr(cue.startTime, 0)),
        text: typeof cue.text === "string" ? cue.text : "",
      });
    }
    return { cues: out, truncated: cues.length > MAX_CUES };
  }

  const TEXT_KINDS = new Set(["captions", "subtitles"]);

  function videoTracks(video) {
    const tracks = [];
    const seen = new Set();
    for (const element of video.querySelectorAll("track")) {
      if (tracks.length >= MAX_TRACKS) break;
      const kind = (element.getAttribute("kind") || "").trim().toLowerCase();
      if (kind && !TEXT_KINDS.has(kind)) continue;
      if (element.track) seen.add(element.track);
      const { cues, truncated } = readCues(element.track);
      tracks.push({
        kind: kind || "subtitles",
        label: element.label || "",
        srclang: element.srclang || "",
        src: absoluteUrl(element.getAttribute("src"), document.baseURI),
        isDefault: !!element.default,
        cues,
        cuesTruncated: truncated,
      });
    }
    const list = video.textTracks;
    for (let i = 0; list && i < list.length && tracks.length < MAX_TRACKS; i++) {
      const textTrack = list[i];
      if (seen.has(textTrack) || !TEXT_KINDS.has(textTrack.kind)) continue;
      const { cues, truncated } = readCues(textTrack);
      tracks.push({
        kind: textTrack.kind,
        label: textTrack.label || "",
        srclang: textTrack.language || "",
        src: null,
        isDefault: false,
        cues,
        cuesTruncated: truncated,
      });
    }
    return tracks;
  }

  function describeVideo(video, index) {
    let displayWidth = 0;
    let displayHeight = 0;
    try {
      displayWidth = Math.round(video.clientWidth || 0);
      displayHeight = Math.round(video.clientHeight || 0);
    } catch (_) {
      // not rendered
    }
    let tracks = [];
    try {
      tracks = videoTracks(video);
    } catch (_) {
      tracks = [];
    }
    return {
      index,
      src: videoSrc(video),
      duration: finiteOr(video.duration, null),
      currentTime: finiteOr(video.currentTime, 0),
      paused: !!video.paused,
      width: video.videoWidth || 0,
      height: video.videoHeight || 0,
      displayWidth,
      displayHeight,
      title: orNull(video.getAttribute("aria-label")) || orNull(video.getAttribute("title")),
      tracks,
    };
  }

  // --- the document --------------------------------------------------------------------------------

  function meta(doc, ...selectors) {
    for (const selector of selectors) {
      const element = doc.querySelector(selector);
      const content = element && orNull(element.getAttribute("content"));
      if (content) return content;
    }
    return null;
  }

  function pageTitle() {
    const title = collapse(document.title);
    if (title) return title;
    const h1 = document.querySelector("h1");
    return h1 ? collapse(h1.textContent) : "";
  }

  function isPdf() {
    if (document.contentType === "application/pdf") return true;
    const body = document.body;
    if (body?.children.length !== 1) return false;
    const only = body.children[0];
    return only.localName === "embed" && (only.getAttribute("type") || "").toLowerCase() === "application/pdf";
  }

  function runReadability() {
    if (typeof Readability !== "function") return { article: null, error: "Readability is not loaded" };
    try {
      // eslint-disable-next-line no-undef
      const article = new Readability(document.cloneNode(true), { charThreshold: 300 }).parse();
      if (!article || typeof article.content !== "string") return { article: null, error: "no article" };
      const textLength = collapse(article.textContent).length;
      if (textLength < MIN_ARTICLE_CHARS) return { article: null, error: `article too short (${textLength} characters)` };
      return { article, textLength, error: null };
    } catch (error) {
      return { article: null, error: errorText(error) };
    }
  }

  function fallbackBody() {
    const clone = document.cloneNode(true);
    const root = clone.body || clone.documentElement;
    if (!root) return { html: "", textLength: 0 };
    for (const element of Array.from(root.querySelectorAll(STRIPPED))) element.remove();
    return { html: root.innerHTML, textLength: collapse(root.textContent).length };
  }

  function inlineScriptTexts() {
    const texts = [];
    for (const script of document.querySelectorAll("script:not([src])")) texts.push(script.text || "");
    return texts;
  }

  async function extract() {
    const started = Date.now();
    try {
      if (isPdf()) return { ok: false, reason: "pdf", detail: "The tab shows a PDF document." };
      const { article, textLength: articleLength, error: readabilityError } = runReadability();
      let html;
      let textLength;
      if (article) {
        html = article.content;
        textLength = articleLength;
      } else {
        ({ html, textLength } = fallbackBody());
      }
      let videos = [];
      try {
        videos = collectVideos().slice(0, MAX_VIDEOS).map(describeVideo);
      } catch (_) {
        videos = [];
      }
      let youtube = null;
      try {
        youtube = isYouTubeUrl(location.href) ? youtubeFromScripts(inlineScriptTexts(), location.href) : null;
      } catch (_) {
        youtube = null;
      }
      if (textLength === 0 && videos.length === 0 && !youtube) {
        return { ok: false, reason: "no_text", detail: "The page has no text and no video." };
      }
      const a = article || {};
      return {
        ok: true,
        url: location.href,
        title: pageTitle(),
        lang: document.documentElement.lang || "",
        contentType: document.contentType || "",
        method: article ? "readability" : "fallback",
        readabilityError: article ? null : readabilityError,
        siteName: orNull(a.siteName) || meta(document, 'meta[property="og:site_name"]'),
        byline: orNull(a.byline) || meta(document, 'meta[name="author"]', 'meta[property="article:author"]'),
        excerpt: orNull(a.excerpt) || meta(document, 'meta[name="description"]', 'meta[property="og:description"]'),
        publishedTime: orNull(a.publishedTime) || meta(document, 'meta[property="article:published_time"]'),
        html,
        textLength,
        videos,
        youtube,
        elapsedMs: Date.now() - started,
      };
    } catch (error) {
      return { ok: false, reason: "error", detail: errorText(error) };
    }
  }

  function probe() {
    let url = "";
    try {
      url = location.href;
      const body = document.body;
      const text = body?.textContent || "";
      const contentType = document.contentType || "";
      return {
        url,
        title: document.title,
        textLength: text.length,
        videoCount: document.getElementsByTagName("video").length,
        contentType,
        // A PDF served as text shows its raw bytes (py/margin/page/pdf.py, rule 2).
        pdfText: contentType.startsWith("text/plain") && text.trimStart().startsWith("%PDF-"),
      };
    } catch (error) {
      return { url, title: "", textLength: 0, videoCount: 0, contentType: "", error: errorText(error) };
    }
  }

  function seek(wantedSrc, videoIndex, seconds) {
    try {
      const target = Number(seconds);
      if (!Number.isFinite(target)) return { ok: false, reason: "bad_time", detail: String(seconds) };
      const videos = collectVideos();
      if (!videos.length) return { ok: false, reason: "no_video" };
      let video = wantedSrc ? videos.find((v) => v.currentSrc === wantedSrc || v.src === wantedSrc || videoSrc(v) === wantedSrc) : null;
      if (!video && Number.isInteger(videoIndex) && videoIndex >= 0 && videoIndex < videos.length) video = videos[videoIndex];
      if (!video) video = videos[0];
      let time = Math.max(0, target);
      if (Number.isFinite(video.duration)) time = Math.min(time, video.duration);
      video.currentTime = time; // seeking never starts playback
      return { ok: true, currentTime: video.currentTime };
    } catch (error) {
      return { ok: false, reason: "error", detail: errorText(error) };
    }
  }

  // Rule 3: a text file the page names, read as the page would read it. `credentials:
  // "same-origin"` is what a <track> without `crossorigin` sends; a cross-origin answer without
  // CORS, a redirect to one, or a private address the page may not reach fails here as it would
  // for the page. Answers {ok: true, text} or {ok: false, reason: "refused" | "status" |
  // "too_large" | "timeout", detail}; never throws.
  async function readAsPage(url, maxBytes, timeoutMs) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), finiteOr(timeoutMs, 20000));
    try {
      const target = new URL(String(url), location.href);
      if (target.protocol !== "http:" && target.protocol !== "https:") return { ok: false, reason: "refused", detail: target.protocol };
      const response = await fetch(target.href, { credentials: "same-origin", redirect: "follow", signal: controller.signal });
      if (!response.ok) return { ok: false, reason: "status", detail: String(response.status) };
      const limit = finiteOr(maxBytes, 20 * 1024 * 1024);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let size = 0;
      let text = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > limit) {
          controller.abort();
          return { ok: false, reason: "too_large", detail: String(limit) };
        }
        text += decoder.decode(value, { stream: true });
      }
      return { ok: true, text: text + decoder.decode() };
    } catch (error) {
      // A CORS or private-network refusal is a TypeError whose text says nothing more (by design).
      const reason = controller.signal.aborted ? "timeout" : "refused";
      return { ok: false, reason, detail: errorText(error) };
    } finally {
      clearTimeout(timer);
    }
  }

  globalThis.__marginReadAsPage = readAsPage;
  globalThis.__marginJsonAt = jsonAt;
  globalThis.__marginYouTubeFromScripts = youtubeFromScripts;
  globalThis.__marginExtract = extract;
  globalThis.__marginProbe = probe;
  globalThis.__marginSeek = seek;
  // What the user selected in the page, for a saved prompt's {{selection}} (py/margin/page/selection.py).
  globalThis.__marginSelection = () => String(globalThis.getSelection?.() ?? "").slice(0, SELECTION_MAX_CHARS);
})();
