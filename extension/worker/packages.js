// Pyodide's own packages for Python (py/margin/platform/browser.py `load_package`), through the bridge:
// a package the backend needs late (Pillow, for one) is loaded from the extension's wheels.
//
// Rules:
// 1. The running Pyodide is handed over by boot.js (`attachPyodide`) before Python can ask.
// 2. Loading is quiet (no progress lines in the console) and never throws: a failure is a reply.

import { failed, reply } from './wire.js';

let pyodideInstance = null;
export function attachPyodide(pyodide) { pyodideInstance = pyodide; }

export async function loadPackage(name) {
  try {
    await pyodideInstance.loadPackage(name, { messageCallback: () => {} });
    return reply(null);
  } catch (error) {
    return failed('package', error);
  }
}
