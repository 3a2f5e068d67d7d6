// The microphone page (microphone.html): asks Chrome for the microphone once, for the side panel's
// "Voice input" (panel/voice_input.js), since a side panel cannot show the permission prompt.
// The permission is the extension's origin's, so the panel has it from then on. The stream is
// stopped at once: nothing is recorded here.

import * as i18n from "../common/i18n.js";

await i18n.start();
i18n.translatePage();

const allowed = document.getElementById("mic-allowed");
const denied = document.getElementById("mic-denied");

function say(line, key) {
  for (const other of [allowed, denied]) {
    other.textContent = other === line ? i18n.t(key) : "";
    other.parentElement.hidden = other !== line;
  }
}

async function ask() {
  try {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    for (const track of stream.getTracks()) track.stop();
    say(allowed, "panel_mic_allowed");
  } catch (error) {
    console.warn("Margin: the microphone was not allowed", error);
    say(denied, "panel_mic_denied");
  }
}

document.getElementById("allow-microphone").addEventListener("click", ask);
ask();
