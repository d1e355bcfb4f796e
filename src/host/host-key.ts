import { createHash } from "node:crypto";

/** OpenSSH's SHA256 fingerprint of a raw public host key: `SHA256:` + unpadded base64 of its digest. */
export function fingerprintSha256(rawKey: Buffer): string {
  return `SHA256:${createHash("sha256").update(rawKey).digest("base64").replace(/=+$/, "")}`;
}
