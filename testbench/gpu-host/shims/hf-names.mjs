/**
 * Small pieces of huggingface_hub that `hf download` (hf-download.mjs) relies on: its size format,
 * URL quoting, the revision and etag formats, and allow/ignore pattern matching.
 */
import { createHash } from "node:crypto";

export const REGEX_COMMIT_HASH = /^[0-9a-f]{40}$/;

export const REGEX_SHA256 = /^[0-9a-f]{64}$/;

/** `_format_size` of huggingface_hub (`62.9M`). */
export function formatSize(num) {
  let n = num;
  for (const unit of ["", "K", "M", "G", "T", "P", "E", "Z"]) {
    if (Math.abs(n) < 1000) return `${n.toFixed(1)}${unit}`;
    n /= 1000;
  }
  return `${n.toFixed(1)}Y`;
}

/** Python's urllib.parse.quote: `safe` characters and unreserved ones stay, the rest is %-encoded. */
export function quote(s, safe = "/") {
  let out = "";
  for (const ch of s) {
    if (/[A-Za-z0-9_.\-~]/.test(ch) || safe.includes(ch)) out += ch;
    else
      out += encodeURIComponent(ch).replace(
        /[!'()*]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      );
  }
  return out;
}

/** `_short_hash`: urlsafe base64 (with padding) of sha1(name). */
export function shortHash(name) {
  return createHash("sha1").update(name).digest("base64").replace(/\+/g, "-").replace(/\//g, "_");
}

/** fnmatch.fnmatch (case-sensitive on POSIX): `*` and `?` match `/` too. */
function fnmatchToRegExp(pattern) {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === "*") re += ".*";
    else if (ch === "?") re += ".";
    else if (ch === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end < 0) re += "\\[";
      else {
        let body = pattern.slice(i + 1, end);
        if (body.startsWith("!")) body = `^${body.slice(1)}`;
        re += `[${body.replace(/\\/g, "\\\\")}]`;
        i = end;
      }
    } else re += ch.replace(/[.+^${}()|\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`, "s");
}

/** `filter_repo_objects`: a pattern ending with "/" means everything below that folder. */
export function filterRepoObjects(items, allowPatterns, ignorePatterns) {
  const prep = (patterns) =>
    patterns === undefined || patterns === null
      ? undefined
      : patterns.map((p) => fnmatchToRegExp(p.endsWith("/") ? `${p}*` : p));
  const allow = prep(allowPatterns);
  const ignore = prep(ignorePatterns);
  return items.filter((item) => {
    if (allow !== undefined && !allow.some((re) => re.test(item))) return false;
    if (ignore?.some((re) => re.test(item))) return false;
    return true;
  });
}

export function normalizeEtag(etag) {
  if (!etag) return null;
  return etag.replace(/^W\//, "").replace(/^"|"$/g, "");
}
