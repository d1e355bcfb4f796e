import { z } from "zod";
import { problem } from "../problem-text.ts";
import { HOST_KEY_TYPES } from "./host-key-type.ts";

export const sshSchema = z.strictObject({
  address: z
    .string(problem("ssh.address is not set", "set it to the host's DNS name or IP address"))
    .regex(
      /^[A-Za-z0-9.:-]{1,253}$/,
      problem("ssh.address is not a host name or IP address", "use e.g. gpu-1.internal or 10.0.0.5"),
    ),
  port: z.number().int().min(1).max(65535).default(22),
  user: z
    .string(problem("ssh.user is not set", "set the login user, e.g. modelswap"))
    .regex(/^[a-z_][a-z0-9_-]{0,31}$/, problem("ssh.user is not a Unix user name", "use e.g. modelswap")),
  privateKeyPath: z
    .string(
      problem(
        "ssh.privateKeyPath is not set",
        "point it at the bot's private key file (ed25519 recommended), e.g. /etc/modelswap/id_ed25519",
      ),
    )
    .regex(/^\//, problem("ssh.privateKeyPath must be absolute", "use e.g. /etc/modelswap/id_ed25519")),
  hostKeySha256: z
    .string(
      problem(
        "ssh.hostKeySha256 is not set: host keys are always pinned",
        "run: ssh-keyscan -t ed25519 -p PORT HOST | ssh-keygen -lf -   and copy the SHA256:… value",
      ),
    )
    .regex(
      /^SHA256:[A-Za-z0-9+/]{43}$/,
      problem(
        "ssh.hostKeySha256 is not a SHA256 fingerprint",
        "run: ssh-keyscan -t ed25519 -p PORT HOST | ssh-keygen -lf -   and copy the SHA256:… value (43 characters after the colon)",
      ),
    ),
  hostKeyType: z
    .enum(HOST_KEY_TYPES)
    .optional()
    .describe(
      "the type of the pinned key, as ssh-keygen -lf prints it in parentheses (ED25519, ECDSA, RSA), in lower case; when set, only that type's key is asked for; when not, the host's ed25519, then ecdsa, then rsa key is tried until one matches the pin",
    ),
  connectTimeoutSeconds: z.number().positive().max(300).default(10),
  keepaliveSeconds: z.number().positive().max(600).default(15),
  maxSessions: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(8)
    .describe("concurrent channels on one connection; sshd's MaxSessions defaults to 10"),
});

/** A host's ssh: block, as the config holds it (defaults applied). */
export type SshConfig = z.infer<typeof sshSchema>;
