import ssh2 from "ssh2";
import type { CopyKey } from "./peer-copy.ts";

/** A new ed25519 key for a rollout's copies (OpenSSH's private key format; the public half as one line). */
export function newCopyKey(comment: string): CopyKey {
  // ssh2 is CommonJS: Node's ESM loader finds `Client` among its named exports, not `utils`
  const made = ssh2.utils.generateKeyPairSync("ed25519", { comment });
  return { publicKey: made.public.split(" ").slice(0, 2).join(" "), privateKey: made.private };
}
