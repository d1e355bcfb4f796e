import { isIP } from "node:net";
import { knownHostsLine, PEER_HOST_ALIAS, type PeerSource } from "../../../src/host/peer-copy.ts";
import { type ShellCommand, sh } from "../../../src/host/shell-quote.ts";
import type { ModelSummary } from "../../../src/hub/types.ts";
import { verifyScript } from "./download-task.ts";

/** The secret a copy task gets its key by (detached-task.ts: through a mode-600 file, never argv). */
export const PEER_KEY_VARIABLE = "MODELSWAP_PEER_KEY"; // the script below names it as it is

/**
 * The detached copy of a model's files from a peer of the rollout (src/host/peer-copy.ts): the key
 * written to a mode-600 file and removed when the task ends, a known_hosts of the peer's pinned key only,
 * an ssh that reads no user config and takes no other key, then rsync of exactly the listed files (the
 * peer's rrsync confines it to the model's directory there, read only), then the same size and sha256
 * check as a download (download-task.ts verifyScript). Any failure fails the task: the stage then fetches
 * from the Hub.
 */
export function copyScript(
  info: Pick<ModelSummary, "repo" | "sha" | "files">,
  modelDir: string,
  dir: string,
  source: PeerSource,
): ShellCommand {
  const key = `${dir}/peer_key`;
  const known = `${dir}/known_hosts`;
  const rsh = `${dir}/peer-ssh`;
  const files = `${dir}/files`;
  // rsync splits its -e command on spaces: the wrapper's path is one plain word (checked by the stage)
  const wrapper = sh`#!/bin/sh
exec ssh -F /dev/null -i ${key} -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=${known} -o GlobalKnownHostsFile=/dev/null -o HostKeyAlias=${PEER_HOST_ALIAS} -o ConnectTimeout=15 -o ServerAliveInterval=15 -o ServerAliveCountMax=4 -p ${String(source.port)} "$@"`;
  const address = isIP(source.address) === 6 ? `[${source.address}]` : source.address;
  return sh`trap 'rm -f -- ${key}' EXIT
( umask 077 && printf '%s\\n' "$MODELSWAP_PEER_KEY" > ${key} )
unset MODELSWAP_PEER_KEY
printf '%s\\n' ${knownHostsLine(source)} > ${known}
printf '%s\\n' ${wrapper.text} > ${rsh}
chmod 700 ${rsh}
cut -d' ' -f2- < ${`${dir}/sizes`} > ${files}
mkdir -p ${modelDir}
echo ${`modelswap: copying ${info.files.length} files of ${info.repo}@${info.sha} from ${source.host} (${source.address}:${source.port}) into ${modelDir}`}
rsync -t --files-from=${files} -e ${rsh} ${`${source.user}@${address}:`} ${`${modelDir}/`}
${verifyScript(modelDir, dir)}`;
}

/**
 * Adds the rollout's serving line to the login user's authorized_keys (once: a line with the rollout's
 * marker is replaced), creating the file and its directory with the modes sshd's StrictModes wants.
 */
export function addServingLine(line: string, marker: string): ShellCommand {
  return sh`umask 077 && mkdir -p "$HOME/.ssh" && f="$HOME/.ssh/authorized_keys" && touch "$f" && { grep -vF -- ${marker} "$f" || true; } > "$f.modelswap" && printf '%s\\n' ${line} >> "$f.modelswap" && cat "$f.modelswap" > "$f" && rm -f "$f.modelswap"`;
}

/** Removes the rollout's serving line (the file is rewritten in place: its owner and mode stay). */
export function removeServingLine(marker: string): ShellCommand {
  return sh`f="$HOME/.ssh/authorized_keys"; [ -f "$f" ] || exit 0; umask 077 && { grep -vF -- ${marker} "$f" || true; } > "$f.modelswap" && cat "$f.modelswap" > "$f" && rm -f "$f.modelswap"`;
}
