import { expect, it } from "vitest";
import { commandFailed, type ExecResult } from "../../src/host/transport.ts";

const failed = (code: number, stderr: string, stdout = ""): ExecResult => ({
  code,
  signal: null,
  stdout,
  stderr,
  durationMs: 5,
});

/** A failed host command's error says why it failed, not only where to look. */
it("says systemctl's reason, not its closing pointer to systemctl status", () => {
  // systemd's own words when a start job fails (src/systemctl/systemctl-start-unit.c)
  const stderr = [
    "Job for vllm-x.service failed because the control process exited with error code.",
    'See "systemctl status vllm-x.service" and "journalctl -xeu vllm-x.service" for details.',
    "",
  ].join("\n");
  const error = commandFailed("gpu-1", "starting vllm-x.service", failed(1, stderr));
  expect(error.code).toBe("HOST_COMMAND_FAILED");
  expect(error.message).toBe(
    "starting vllm-x.service failed on gpu-1 (exit 1): Job for vllm-x.service failed because the control process exited with error code.",
  );
});

it("keeps the last line otherwise, and a lone pointer when that is all there is", () => {
  expect(commandFailed("h", "x", failed(2, "first\nsecond\n")).message).toBe(
    "x failed on h (exit 2): second",
  );
  expect(commandFailed("h", "x", failed(1, 'See "systemctl status u" for details.')).message).toBe(
    'x failed on h (exit 1): See "systemctl status u" for details.',
  );
  expect(commandFailed("h", "x", failed(1, "", "only out\n")).message).toBe(
    "x failed on h (exit 1): only out",
  );
});

it("quotes at most 1,000 characters of that line, and the last of a line a progress bar redrew with \\r", () => {
  // the message becomes a swap's reason, its stage's detail and an event: one line of megabytes (a
  // progress bar without a newline) made a record the store refused
  const bar = Array.from({ length: 50_000 }, (_, i) => `\rpulling ${i % 100}%`).join("");
  const error = commandFailed("h", "x", failed(1, `${bar}\rError: no space left on device\n`));
  expect(error.message).toBe("x failed on h (exit 1): Error: no space left on device");
  const long = commandFailed("h", "x", failed(1, `${"z".repeat(5000)}\n`)).message;
  expect(long).toBe(`x failed on h (exit 1): ${"z".repeat(999)}…`);
});
