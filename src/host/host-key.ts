import { createHash } from "node:crypto";
import type { HostKeyType } from "./host-key-type.ts";

/** OpenSSH's SHA256 fingerprint of a raw public host key: `SHA256:` + unpadded base64 of its digest. */
export function fingerprintSha256(rawKey: Buffer): string {
  return `SHA256:${createHash("sha256").update(rawKey).digest("base64").replace(/=+$/, "")}`;
}

/**
 * The SSH host-key algorithms that select a host's key of each type (RFC 8709, RFC 5656, RFC 8332),
 * in ssh2's default order. A server presents one host key per handshake, the one for the first
 * algorithm both sides offer; offering one type's algorithms at a time asks for that type's key.
 */
export const HOST_KEY_ALGORITHMS: Readonly<Record<HostKeyType, readonly string[]>> = {
  ed25519: ["ssh-ed25519"],
  ecdsa: ["ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"],
  rsa: ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"],
};

/** A raw key blob starts with its type as an SSH string (RFC 4253 §6.6): `ssh-ed25519` → `ED25519`. */
export function hostKeyLabel(rawKey: Buffer): string {
  const length = rawKey.length >= 4 ? rawKey.readUInt32BE(0) : 0;
  const name = length > 0 && length < 64 ? rawKey.subarray(4, 4 + length).toString("latin1") : "";
  if (name === "ssh-ed25519") return "ED25519";
  if (name.startsWith("ecdsa-sha2-")) return "ECDSA";
  if (name === "ssh-rsa") return "RSA";
  return name === "" ? "unknown type" : name;
}
