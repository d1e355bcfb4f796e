/** Sizes, sleeps and log timestamps shared by the simulated SGLang server's modules (sglang-server*.mjs). */

export const GiB = 1024 ** 3;

/** @param {number} ms */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

export function stamp() {
  const d = new Date();
  const p = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** @param {number} n */
export const gb = (n) => n.toFixed(2);
