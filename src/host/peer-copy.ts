import { z } from "zod";

/*
 * Peer copies: in a rollout, the weights cross the Hub once. The first host fetches them from the Hub;
 * every other host copies them from a host of the rollout that already holds them, checked (sizes and the
 * Hub's sha256) as a download is, and then serves them in turn: a tree, with at most `copyFanout` copies
 * from one host at once (src/config/groups-schema.ts).
 *
 * How a copy logs in (sshd(8) AUTHORIZED_KEYS FILE FORMAT; rrsync(1)):
 * - The rollout has one ed25519 key of its own, made when its first host asks for it and kept in Redis
 *   only until the rollout's copies are over (src/store/peer-copies.ts).
 * - A host serves its files by adding one line for that key to its login user's authorized_keys, under its
 *   own swap's fence: `restrict` (no forwarding, no pty), `from=` the rollout's other hosts, an
 *   `expiry-time`, and `command="rrsync -ro <model dir>"`, so the key can read that one directory through
 *   rsync and do nothing else. Its swap removes the line when it ends; a copy already running goes on.
 * - The copying host writes the key to a mode-600 file in its task directory, from the task's secrets
 *   (never a command line), and deletes it when the copy ends. It checks the serving host's key against
 *   the one the bot pinned for that host (hosts[].ssh.hostKeySha256, seen on the bot's own connection):
 *   a known_hosts file of that one key and StrictHostKeyChecking=yes.
 */

/** A host of a rollout that serves its verified files to the others: how they reach it. */
export const peerSourceSchema = z.object({
  host: z.string(),
  address: z.string(),
  port: z.number().int(),
  user: z.string(),
  /** Where its files are: the copy reads this directory, which rrsync confines it to. */
  modelDir: z.string(),
  /** The host's key as the bot pinned it: `<type> <base64>` (known_hosts' key part). */
  hostKey: z.string(),
});
export type PeerSource = z.infer<typeof peerSourceSchema>;

/** A rollout's copy key: the public half goes in serving lines, the private half to copying hosts. */
export const copyKeySchema = z.object({ publicKey: z.string(), privateKey: z.string() });
export type CopyKey = z.infer<typeof copyKeySchema>;

/** The alias a copy's known_hosts names the serving host by (ssh -o HostKeyAlias): its one entry. */
export const PEER_HOST_ALIAS = "modelswap-peer";

/**
 * What marks a rollout's line in a host's authorized_keys (its comment): the line is added and removed by
 * it. It names the host too, for hosts whose login users share one file (the bench's, behind one sshd).
 */
export function copyMarker(rolloutId: string, host: string): string {
  return `modelswap-peer-copy:${rolloutId}:${host}`;
}

/** The known_hosts line a copy trusts: the serving host's pinned key, under the alias. */
export function knownHostsLine(source: Pick<PeerSource, "hostKey">): string {
  return `${PEER_HOST_ALIAS} ${source.hostKey}`;
}

/** A raw SSH public key blob (RFC 4253 §6.6) as known_hosts and authorized_keys write it. */
export function keyText(rawKey: Buffer): string {
  const length = rawKey.length >= 4 ? rawKey.readUInt32BE(0) : 0;
  const type = rawKey.subarray(4, 4 + length).toString("latin1");
  if (!/^[a-z0-9@.-]+$/.test(type)) throw new Error("not an SSH public key blob");
  return `${type} ${rawKey.toString("base64")}`;
}

/**
 * The authorized_keys line by which the rollout's key may read `modelDir` through rrsync, from the given
 * addresses, until `expires`. Its option values are written between double quotes, which sshd ends at
 * the next one, and the command goes to the login shell: an address or a directory of other characters
 * than plain ones is refused here (the host then does not serve; its peers fetch from the Hub).
 */
export function servingLine(line: {
  publicKey: string;
  modelDir: string;
  from: readonly string[];
  expires: Date;
  rolloutId: string;
  host: string;
}): string {
  const { publicKey, modelDir, from, expires, rolloutId, host } = line;
  for (const address of from)
    if (!/^[A-Za-z0-9.:%-]+$/.test(address)) throw new Error(`not an address sshd's from= takes: ${address}`);
  // sshd hands the command to the login shell: the directory is one word of plain characters
  if (!/^\/[A-Za-z0-9._/@+-]+$/.test(modelDir))
    throw new Error(`a model directory that is not one plain word: ${modelDir}`);
  if (!/^ssh-ed25519 [A-Za-z0-9+/=]+$/.test(publicKey)) throw new Error("not an ed25519 public key");
  if (from.length === 0) throw new Error("a serving line names the addresses it admits");
  const options = [
    "restrict",
    `from="${from.join(",")}"`,
    `expiry-time="${expiryTime(expires)}"`,
    `command="rrsync -ro ${modelDir}"`,
  ];
  return `${options.join(",")} ${publicKey} ${copyMarker(rolloutId, host)}`;
}

/** sshd's expiry-time: YYYYMMDDHHMM, in UTC with the trailing Z. */
function expiryTime(at: Date): string {
  const iso = at.toISOString(); // 2026-12-07T20:10:54.000Z
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}Z`;
}
