/**
 * Why the SSH private key could not be read, in words and without its path: the path says where a
 * credential lives (DESIGN §6), and these words reach Slack and the log. Node's own messages
 * (`ENOENT: no such file or directory, open '/…'`) carry the path, so they are never passed on.
 */
export function keyReadProblem(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case "ENOENT":
    case "ENOTDIR":
      return "the file does not exist";
    case "EACCES":
    case "EPERM":
      return "the bot's user is not allowed to read it";
    case "EISDIR":
      return "it is a directory, not a key file";
    default:
      return code === undefined ? "it could not be read" : `it could not be read (${code})`;
  }
}

/** The config setting that names a host's key, for messages that must not print the path itself. */
export function keySetting(index: number | undefined, hostName: string): string {
  return index === undefined
    ? `ssh.privateKeyPath of host ${hostName}`
    : `hosts[${index}].ssh.privateKeyPath`;
}
