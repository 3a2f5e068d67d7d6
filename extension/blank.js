// The benchmark's baseline page: reports its first frame in `window.__marginFirstPaint`, measured
// as sidepanel.js measures the panel's (a message posted from a requestAnimationFrame callback is
// handled once that frame's rendering is done).
requestAnimationFrame(() => {
  const channel = new MessageChannel();
  channel.port1.onmessage = () => {
    window.__marginFirstPaint = performance.now();
    const htmlParsedAt = performance.getEntriesByType("navigation")[0]?.domInteractive ?? null;
    window.__marginPaintBreakdown = { htmlParsedAt, paintedAt: window.__marginFirstPaint };
  };
  channel.port2.postMessage(null);
});
