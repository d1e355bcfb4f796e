/**
 * Host key types as `ssh-keygen -lf` names them in parentheses: `256 SHA256:… host (ED25519)`; the
 * config's `hostKeyType` accepts these (src/host/host-key.ts selects each one's algorithms).
 */
export const HOST_KEY_TYPES = ["ed25519", "ecdsa", "rsa"] as const;
export type HostKeyType = (typeof HOST_KEY_TYPES)[number];
