// DEV ONLY (not shipped: the build skips *.dev.*). A fake `chrome` for looking at the pages
// without the service worker: inject it before the page's scripts (Playwright add_init_script,
// or a <script> tag in a dev copy). Query string: ?fixture=empty|long|short|hostile&provider=0|1
// &ping=<ms before app.ping answers>&dark is up to the browser.
(() => {
  if (window.chrome?.runtime?.id) return;
  const params = new URLSearchParams(location.search);
  const fixture = params.get("fixture") || "short";
  const pingDelay = Number(params.get("ping") ?? 600);
  const streamDelay = Number(params.get("stream") ?? 25);
  const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

  function picture(w, h, hue) {
    const canvas = document.createElement("canvas");
    canvas.width = w;
    canvas.height = h;
    const g = canvas.getContext("2d");
    const grad = g.createLinearGradient(0, 0, w, h);
    grad.addColorStop(0, `hsl(${hue} 70% 60%)`);
    grad.addColorStop(1, `hsl(${(hue + 60) % 360} 70% 45%)`);
    g.fillStyle = grad;
    g.fillRect(0, 0, w, h);
    g.fillStyle = "rgba(255,255,255,.85)";
    g.font = `${Math.round(h / 6)}px sans-serif`;
    g.fillText("Figure", w * 0.1, h * 0.55);
    return canvas.toDataURL("image/png");
  }

  const CODE_ANSWER = [
    "Here is a small **Python** function and how it compares:",
    "",
    "```python",
    "def slugify(title: str) -> str:",
    '    """Lowercase, ASCII, dashes."""',
    "    import re",
    '    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")',
    "```",
    "",
    "| Approach | Speed | Unicode |",
    "| --- | ---: | --- |",
    "| `re.sub` | fast | drops accents |",
    "| `unicodedata.normalize` + `re.sub` | fast | keeps letters as ASCII |",
    "| third-party `python-slugify` | medium | full transliteration, very long column text to force horizontal scrolling |",
    "",
    "1. Use the first for ids.",
    "2. Use the second for titles.",
    "",
    "> Tip: keep slugs stable once published. See [the docs](https://docs.python.org/3/library/re.html).",
  ].join("\n");

  function fixtureHistory(name) {
    if (name === "empty") return [];
    if (name === "hostile") {
      return [
        { role: "user", content: "Say something nasty" },
        {
          role: "assistant",
          content: [
            "<img src=x onerror=\"window.__pwned='img'\">",
            "<script>window.__pwned='script'</script>",
            "[click me](javascript:window.__pwned='mdlink')",
            "<a href=\"javascript:window.__pwned='a'\">raw a</a>",
            "<svg onload=\"window.__pwned='svg'\"><circle r=5></circle></svg>",
            "<iframe src=\"javascript:window.__pwned='iframe'\"></iframe>",
            "<form action=\"https://evil.example\"><input name=q><button>go</button></form>",
            "![pixel](https://tracker.example/p.gif) ![ok](data:image/png;base64,iVBORw0KGgo=)",
            "[ok link](https://example.com) [mail](mailto:a@b.c) [data](data:text/html,<script>alert(1)</script>)",
            "<details open><summary>x</summary><p onclick=\"window.__pwned='p'\">y</p></details>",
            "```html\n<script>window.__pwned='code'</script>\n```",
            "- [x] done\n- [ ] todo",
          ].join("\n\n"),
        },
      ];
    }
    const img = picture(640, 400, 220);
    const shot = picture(1280, 800, 20);
    const base = [
      { role: "user", content: "What does this chart say? Keep it short.\nTwo lines, please." },
      { role: "assistant", content: "The chart shows **steady growth** from January to June, with a dip in March.\n\nIn short: _up and to the right_, one wobble." },
      {
        role: "user",
        content: [
          { type: "text", text: "And these two?" },
          { type: "image_url", image_url: { url: img }, meta: { name: "chart.png", alt: "Sales chart" } },
          { type: "image_url", image_url: { url: shot }, meta: { name: "screenshot.png" } },
        ],
      },
      { role: "assistant", content: CODE_ANSWER },
      { role: "user", content: "Thanks! Can you make it shorter?" },
      { role: "assistant", content: "Sure: `re.sub(r\"[^a-z0-9]+\", \"-\", s.lower())` and strip dashes. That is the whole trick, and it is fast enough for ids.", stopped: true },
    ];
    if (name === "short") return base;
    const out = [];
    const count = Number(params.get("count") || 200);
    while (out.length < count) out.push(...clone(base));
    return out.slice(0, count);
  }

  const provider = { id: "p1", type: "openai", name: "OpenAI", baseUrl: "https://api.openai.com/v1", apiKey: "sk-test-1234", model: "gpt-4o-mini" };
  const data = {
    history: fixtureHistory(fixture),
    providers: params.get("provider") === "0" ? [] : [provider],
    activeProviderId: params.get("provider") === "0" ? null : "p1",
    uiLanguage: "auto",
  };
  const listeners = [];
  const fire = (changes) => setTimeout(() => listeners.forEach((fn) => fn(clone(changes), "local")), 0);

  const local = {
    async get(keys) {
      const list = keys == null ? Object.keys(data) : Array.isArray(keys) ? keys : [keys];
      const out = {};
      for (const k of list) if (k in data) out[k] = clone(data[k]);
      return out;
    },
    async set(items) {
      const changes = {};
      for (const [k, v] of Object.entries(items)) {
        changes[k] = { oldValue: data[k], newValue: clone(v) };
        data[k] = clone(v);
      }
      fire(changes);
    },
  };

  const reply = (value) => ({ ok: true, value });
  const fail = (code, message) => ({ ok: false, error: { code, message } });
  const handlers = {
    "app.ping": () => new Promise((r) => setTimeout(() => r(reply({ python: "3.12.7", booted_ms: pingDelay })), pingDelay)),
    "images.bound": () => reply({ changed: 0, bytesBefore: 0, bytesAfter: 0 }),
    "session.new": async () => {
      await local.set({ history: [] });
      return reply({ savedId: "s1" });
    },
    "tab.screenshot": () => reply({ dataUrl: picture(1280, 720, 140), name: "Screenshot.png", source: "screenshot", title: "Example page", url: "https://example.com", capturedAt: Date.now() }),
    "options.get": () => reply({ providers: clone(data.providers), activeProviderId: data.activeProviderId, uiLanguage: data.uiLanguage }),
    "options.save": async (p) => {
      if (!Array.isArray(p.providers)) return fail("invalid_options", "The providers could not be saved.");
      await local.set({ providers: p.providers, activeProviderId: p.activeProviderId ?? null, ...(p.uiLanguage ? { uiLanguage: p.uiLanguage } : {}) });
      return reply({ providers: clone(data.providers), activeProviderId: data.activeProviderId, uiLanguage: data.uiLanguage });
    },
    "provider.test": (p) =>
      new Promise((r) =>
        setTimeout(() => {
          const pr = p.provider || {};
          if (!pr.apiKey && !/localhost|127\.0\.0\.1/.test(pr.baseUrl || ""))
            r(reply({ ok: false, message: "The provider refused the API key (401). Check the key and try again." }));
          else r(reply({ ok: true, message: `Connected: ${pr.model || "the model"} answered in 412 ms.` }));
        }, 400),
      ),
  };

  function makePort() {
    const onMessage = [];
    const onDisconnect = [];
    let open = true;
    let stop = false;
    const post = (m) => open && setTimeout(() => onMessage.forEach((fn) => fn(clone(m))), 0);
    const close = () => {
      if (!open) return;
      open = false;
      setTimeout(() => onDisconnect.forEach((fn) => fn()), 0);
    };
    async function run(start) {
      if (start.action === "stop") {
        stop = true;
        return;
      }
      let history = clone(data.history);
      if (start.action === "send" || start.action === "edit") {
        if (start.action === "edit") history = history.slice(0, start.index);
        const content = start.images?.length
          ? [...(start.text ? [{ type: "text", text: start.text }] : []), ...start.images.map((a) => ({ type: "image_url", image_url: { url: a.dataUrl }, meta: { name: a.name, alt: a.alt } }))]
          : start.text;
        history.push({ role: "user", content });
      } else if (start.action === "regenerate") {
        while (history.length && history[history.length - 1].role !== "user") history.pop();
      }
      await local.set({ history });
      post({ event: "started" });
      if (!data.activeProviderId) {
        post({ event: "error", error: { code: "no_provider", message: "No provider is set up yet. Open Settings and add one." } });
        return close();
      }
      if (params.get("turn") === "lost") return setTimeout(close, 300);
      const answer = params.get("turn") === "short" ? "Hi!" : CODE_ANSWER;
      let sent = "";
      for (const piece of answer.match(/[\s\S]{1,6}/g)) {
        if (stop || !open) break;
        await new Promise((r) => setTimeout(r, streamDelay));
        sent += piece;
        post({ event: "delta", text: piece });
      }
      history.push({ role: "assistant", content: sent, ...(stop ? { stopped: true } : {}) });
      await local.set({ history });
      post({ event: stop ? "stopped" : "done" });
      close();
    }
    return {
      name: "chat.turn",
      onMessage: { addListener: (fn) => onMessage.push(fn) },
      onDisconnect: { addListener: (fn) => onDisconnect.push(fn) },
      postMessage: (m) => run(clone(m)),
      disconnect: () => (open = false),
    };
  }

  window.chrome = {
    runtime: {
      id: "fake-dev",
      lastError: undefined,
      getURL: (p) => new URL(p, location.href).href,
      openOptionsPage: () => window.open("options.html", "_blank"),
      async sendMessage(message) {
        const handler = handlers[message?.type];
        if (!handler) return fail("unknown_message", `Unknown request ${message?.type}.`);
        return handler(message.payload || {});
      },
      connect: () => makePort(),
    },
    storage: { local, onChanged: { addListener: (fn) => listeners.push(fn), removeListener() {} } },
  };
})();
