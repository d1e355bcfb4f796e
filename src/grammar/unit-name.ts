/**
 * A systemd service name as it reaches `systemctl` (as an argument: one starting with `-` or `.` would
 * read as an option or a hidden file): letters, digits and `@._:-`, ending in `.service`.
 */
export const UNIT_NAME = /^[A-Za-z0-9_][A-Za-z0-9@._:-]{0,199}\.service$/;

export function isUnitName(text: string): boolean {
  return UNIT_NAME.test(text);
}
