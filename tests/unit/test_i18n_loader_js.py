"""extension/common/i18n.js in node, against the real catalogue: Chrome's substitution exactly as Python
does it (margin.i18n.catalogue), the same locale resolution, the setting's locale fetched when Chrome
answers in another one, plurals and Intl formats in that language, and a change followed live."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_js_module

from margin.i18n import catalogue

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "extension" / "common" / "i18n.js"
LOCALES_DIR = REPO / "extension" / "_locales"
CONTRACT_STUB = 'export const CONTRACT = { storage: { keys: { uiLanguage: "uiLanguage" } } };\n'

SCRIPT = r"""
const files = input.files;
const listeners = [];
let stored = { uiLanguage: "ru" };
globalThis.chrome = {
  i18n: {
    getUILanguage: () => "en-US",
    // Chrome answers in English (its locale): the setting's Russian must be fetched.
    getMessage: (key, subs = []) => {
      if (key === "@@ui_locale") return "en_US";
      const entry = JSON.parse(files.en)[key];
      return entry ? i18n.render(entry, subs) : "";
    },
  },
  runtime: { getURL: (path) => "chrome-extension://x/" + path },
  storage: {
    local: { get: async () => stored },
    onChanged: { addListener: (fn) => listeners.push(fn) },
  },
};
const fetched = [];
globalThis.fetch = async (url) => {
  const locale = url.split("/").at(-2);
  fetched.push(locale);
  return { ok: true, status: 200, json: async () => JSON.parse(files[locale]) };
};

const out = {};
out.renders = input.cases.map(([entry, subs]) => i18n.render(entry, subs));
out.locales = input.tags.map((tag) => i18n.localeOf(tag));
out.before = i18n.t("options_save");
await i18n.start();
out.ru = {
  lang: i18n.language(),
  save: i18n.t("options_save"),
  edit: i18n.t("options_edit_named", "OpenAI"),
  over: [1, 2, 5, 21, 20000].map((n) => i18n.tPlural("options_summarize_over", n)),
  models: [1, 3, 11].map((n) => i18n.tPlural("options_models_offered", n)),
  size: i18n.formatSize(2500000),
  bytes: [1, 2, 5, 21, 64, 999].map((n) => i18n.formatSize(n)),
  ago: i18n.formatRelative(Date.now() - 180000),
};
// A text whose arguments are words too (a status's message, a number): said again in the next language.
const status = { dataset: {}, textContent: "" };
i18n.setWords(status, "panel_run_status_after_loading", { key: "panel_run_error" }, { number: 1.2, options: { minimumFractionDigits: 1 } }, { number: 12, options: { minimumFractionDigits: 1 } });
out.status = [status.textContent];
const caption = { dataset: {}, textContent: "" };
i18n.setWords(caption, "panel_run_table_size", { plural: "panel_run_rows", count: 5 }, { plural: "panel_run_columns", count: 2 });
const img = { dataset: {}, attributes: {}, setAttribute(name, value) { this.attributes[name] = value; } };
i18n.setAttributeWords(img, "alt", "panel_run_figure", { number: 1 }, "640×480");
out.figure = [caption.textContent, img.attributes.alt];
let told = null;
i18n.onLanguageChange((locale) => { told = locale; });
stored = { uiLanguage: "ja" };
for (const fn of listeners) fn({ uiLanguage: { newValue: "ja" } }, "local");
await new Promise((resolve) => setTimeout(resolve, 50));
globalThis.document = { documentElement: {} };
i18n.translatePage({
  querySelectorAll: (selector) => ({ "[data-i18n]": [status, caption], "[data-i18n-attrs]": [img] })[selector] || [],
});
out.status.push(status.textContent, status.dataset.i18n);
out.figure.push(caption.textContent, img.attributes.alt);
out.ja = { told, lang: i18n.language(), save: i18n.t("options_save"), over: i18n.tPlural("options_summarize_over", 50000), ago: i18n.formatRelative(Date.now() - 180000) };
for (const fn of listeners) fn({ uiLanguage: { newValue: "en" } }, "local");
await new Promise((resolve) => setTimeout(resolve, 50));
out.en = { told, save: i18n.t("options_save"), models: [1, 2].map((n) => i18n.tPlural("options_models_offered", n)), bytes: [0, 1, 64, 1000].map((n) => i18n.formatSize(n)) };
out.fetched = fetched;
console.log(JSON.stringify(out));
"""


def test_the_loader_speaks_the_settings_language_and_follows_it(tmp_path):
    files = {p.name: (p / "messages.json").read_text(encoding="utf-8") for p in LOCALES_DIR.iterdir()}
    entries = [
        (entry, ["$1 & $$", "b", "c"])
        for locale in ("en", "ja", "ru", "zh_CN")
        for entry in json.loads(files[locale]).values()
    ]
    tags = [
        "zh",
        "zh-TW",
        "zh_CN",
        "pt",
        "pt-PT",
        "pt-BR",
        "ja-JP",
        "ko",
        "es-MX",
        "ru-RU",
        "en-GB",
        "de",
        "",
        "EN",
    ]
    (tmp_path / "common").mkdir()
    out = run_js_module(
        tmp_path / "common",
        MODULE,
        "i18n",
        SCRIPT,
        {"files": files, "cases": entries, "tags": tags},
        extra_files={"../generated/contract.js": CONTRACT_STUB},
    )
    assert out["renders"] == [catalogue.render(entry, tuple(subs)) for entry, subs in entries]
    assert out["locales"] == [catalogue.locale_of(tag) for tag in tags]
    assert out["before"] == "Save"
    assert out["ru"] == {
        "lang": "ru",
        "save": "Сохранить",
        "edit": "Изменить OpenAI",
        "over": [
            "Более 1 символа",
            "Более 2 символов",
            "Более 5 символов",
            "Более 21 символа",
            "Более 20\u00a0000 символов",
        ],
        "models": [
            "Доступна 1 модель. Выберите её или введите название.",
            "Доступны 3 модели. Выберите одну или введите название.",
            "Доступно 11 моделей. Выберите одну или введите название.",
        ],
        "size": "2,5 МБ",
        # Under 1 kB, the catalogue's plural forms (Intl's short unit says "64 byte").
        "bytes": ["1 байт", "2 байта", "5 байт", "21 байт", "64 байта", "999 байт"],
        "ago": "3 минуты назад",
    }
    assert out["ja"] == {
        "told": "ja",
        "lang": "ja",
        "save": "保存",
        "over": "50,000 文字を超える場合",
        "ago": "3 分前",
    }
    # Back to Chrome's own locale: nothing fetched, the English strings exactly as before.
    assert out["en"] == {
        "told": "en",
        "save": "Save",
        "models": ["1 model offered. Pick one or type a name.", "2 models offered. Pick one or type a name."],
        "bytes": ["0 bytes", "1 byte", "64 bytes", "1 kB"],
    }
    assert out["fetched"] == ["ru", "ja"]
    assert out["status"] == [
        "Ошибка: выполнение 1,2 с, загрузка 12,0 с",
        "エラー（実行 1.2 秒、読み込み 12.0 秒）",
        "panel_run_status_after_loading",
    ]
    # A plural argument and an attribute with arguments are said again in the next language too.
    assert out["figure"] == ["5 строк × 2 столбца", "Рисунок 1 (640×480)", "5 行 × 2 列", "図 1（640×480）"]


# The service worker's way (background.js): no storage.onChanged listener, which Chrome would hand
# every change with its old and new values (a 20 MB `history` included); it follows the setting
# through its own writes, which all pass bridge.js.
WORKER_SCRIPT = (
    SCRIPT[: SCRIPT.index("const out = {};")]
    + """
const out = {};
await i18n.start({ follow: false });
out.listeners = listeners.length;
out.started = i18n.t("options_save");
let told = [];
i18n.onLanguageChange((locale) => told.push(locale));
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
i18n.settingWritten({ history: [{ role: "user", content: "hi" }] });
await settle();
out.otherKey = [i18n.language(), told.length];
i18n.settingWritten({ uiLanguage: "ja", history: [] });
await settle();
out.ja = [i18n.language(), i18n.t("options_save")];
i18n.settingWritten({ uiLanguage: undefined });  // removed (all data deleted): the browser's language
await settle();
out.removed = [i18n.language(), i18n.t("options_save")];
out.told = told;
console.log(JSON.stringify(out));
"""
)


def test_the_service_worker_follows_its_own_writes_of_the_setting_without_a_storage_listener(tmp_path):
    files = {p.name: (p / "messages.json").read_text(encoding="utf-8") for p in LOCALES_DIR.iterdir()}
    (tmp_path / "common").mkdir()
    out = run_js_module(
        tmp_path / "common",
        MODULE,
        "i18n",
        WORKER_SCRIPT,
        {"files": files},
        extra_files={"../generated/contract.js": CONTRACT_STUB},
    )
    assert out["listeners"] == 0
    assert out["started"] == "Сохранить"  # the stored setting (ru) is read at start
    assert out["otherKey"] == ["ru", 0]
    assert out["ja"] == ["ja", "保存"]
    assert out["removed"] == ["en", "Save"]
    assert out["told"] == ["ja", "en"]
