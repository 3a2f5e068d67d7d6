// "Voice input" beside Send: dictation into "Message" with the Web Speech API's recognition.
//
// Rules:
// 1. Where the browser has no speech recognition (Chromium builds without it, or one whose
//    recognition service refuses: error "network", "service-not-allowed", "language-not-supported"),
//    the button says so: aria-disabled, its description and a click say the sentence
//    (`panel_voice_unavailable`). It is never a button that does nothing.
// 2. A side panel cannot show the microphone prompt: when the permission is not granted yet (or
//    recognition says "not-allowed"), microphone.html is opened in a tab to ask once; the
//    permission is the extension's, so the panel has it from then on.
// 3. While listening the button is pressed (aria-pressed) and a second press stops; what is heard
//    is put after what the box held when dictation began, interim words shown as they come and
//    replaced by the final ones. Recognition speaks Margin's language.

import { svg } from "../common/ui_common.js";
import { t, language } from "../common/i18n.js";
import { $, ui, events, announce, showAlert } from "./state.js";
import { autosize } from "./composer.js";
import { register } from "./registry.js";

const UNAVAILABLE_ERRORS = new Set(["network", "service-not-allowed", "language-not-supported", "audio-capture"]);
let button = null;
let recognition = null;
let unavailable = false;

const Recognition = () => window.SpeechRecognition || window.webkitSpeechRecognition || null;

function paint() {
  const listening = recognition !== null;
  button.replaceChildren(svg("mic"));
  button.setAttribute("aria-label", t("panel_voice_input"));
  button.setAttribute("aria-pressed", String(listening));
  button.title = unavailable ? t("panel_voice_unavailable") : t("panel_voice_input");
  $("voice-input-reason").textContent = unavailable ? t("panel_voice_unavailable") : "";
  if (unavailable) button.setAttribute("aria-disabled", "true");
  else button.removeAttribute("aria-disabled");
}

function refuse() {
  unavailable = true; // rule 1
  paint();
  showAlert(() => t("panel_voice_unavailable"));
}

async function microphoneAllowed() {
  try {
    return (await navigator.permissions.query({ name: "microphone" })).state === "granted";
  } catch {
    return true; // no way to ask: let recognition say "not-allowed" if it is not
  }
}

function askForMicrophone() {
  chrome.tabs.create({ url: chrome.runtime.getURL("microphone.html") });
  showAlert(() => t("panel_voice_permission"));
}

function listen() {
  const start = ui.message.value;
  const joiner = start && !/\s$/.test(start) ? " " : "";
  const listener = new (Recognition())();
  listener.lang = language();
  listener.continuous = true;
  listener.interimResults = true;
  listener.addEventListener("result", (event) => {
    const heard = [...event.results].map((result) => result[0]?.transcript ?? "").join("");
    ui.message.value = start + joiner + heard.trimStart();
    autosize();
  });
  listener.addEventListener("error", (event) => {
    if (event.error === "not-allowed") askForMicrophone();
    else if (UNAVAILABLE_ERRORS.has(event.error)) refuse();
    else if (event.error === "no-speech") showAlert(() => t("panel_voice_failed", t("panel_voice_no_speech")));
    else if (event.error !== "aborted") showAlert(() => t("panel_voice_failed", event.error));
  });
  listener.addEventListener("end", () => {
    if (recognition === listener) recognition = null;
    paint();
    ui.message.focus();
  });
  recognition = listener;
  listener.start();
  paint();
  announce(t("panel_voice_listening"));
}

async function onClick() {
  if (unavailable) {
    showAlert(() => t("panel_voice_unavailable"));
    return;
  }
  if (recognition) {
    recognition.stop();
    return;
  }
  if (!(await microphoneAllowed())) {
    askForMicrophone(); // rule 2
    return;
  }
  try {
    listen();
  } catch (error) {
    console.warn("Margin: speech recognition did not start", error);
    recognition = null;
    refuse();
  }
}

export function init() {
  button = $("voice-input");
  unavailable = Recognition() === null;
  button.addEventListener("click", onClick);
  events.addEventListener("language-changed", paint);
  paint();
}

register({ name: "voice-input", phase: "wire", init });
