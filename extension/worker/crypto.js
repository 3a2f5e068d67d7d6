// WebCrypto for Python's sync (py/margin/platform/browser.py `WebCrypto`; the envelope around these
// bytes is py/margin/sync/crypto.py): PBKDF2-SHA256 key derivation and AES-256-GCM, nothing else.
//
// Rules:
// 1. Keys, nonces and ciphertexts cross as base64 text; a plaintext crosses as UTF-8 bytes from
//    Python (read before the first await, wire.js rule 2) and goes back in pieces (replyPieces).
// 2. No key is kept here: each call imports the raw key it is given, non-extractable, and drops it.
// 3. Never throws (bridge.js rule 2): a refused tag is {ok: false, error: {kind: 'crypto'}}.

import { failed, fromPython, replyPieces, reply } from './wire.js';

const toBytes = (text) => new TextEncoder().encode(text);

function toBase64(bytes) {
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function fromBase64(text) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const aesKey = (keyB64, usage) =>
  crypto.subtle.importKey('raw', fromBase64(keyB64), { name: 'AES-GCM' }, false, [usage]);

export async function cryptoDeriveKey(passphrase, saltB64, iterations) {
  try {
    const secret = toBytes(fromPython(passphrase));
    const base = await crypto.subtle.importKey('raw', secret, 'PBKDF2', false, ['deriveBits']);
    const bits = await crypto.subtle.deriveBits(
      { name: 'PBKDF2', hash: 'SHA-256', salt: fromBase64(saltB64), iterations },
      base,
      256,
    );
    return reply(toBase64(new Uint8Array(bits)));
  } catch (error) {
    return failed('crypto', error);
  }
}

export async function cryptoSeal(keyB64, nonceB64, plaintext, aad) {
  try {
    const data = plaintext.toJs(); // rule 1: UTF-8 bytes, copied before the first await
    const additionalData = aad.toJs();
    const key = await aesKey(keyB64, 'encrypt');
    const sealed = await crypto.subtle.encrypt(
      { name: 'AES-GCM', iv: fromBase64(nonceB64), additionalData },
      key,
      data,
    );
    return replyPieces(toBase64(new Uint8Array(sealed)));
  } catch (error) {
    return failed('crypto', error);
  }
}

export async function cryptoUnseal(keyB64, nonceB64, sealedB64, aad) {
  try {
    const sealed = fromBase64(fromPython(sealedB64));
    const additionalData = aad.toJs();
    const key = await aesKey(keyB64, 'decrypt');
    const opened = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: fromBase64(nonceB64), additionalData },
      key,
      sealed,
    );
    return replyPieces(new TextDecoder('utf-8', { fatal: true }).decode(opened));
  } catch (error) {
    return failed('crypto', error);
  }
}
