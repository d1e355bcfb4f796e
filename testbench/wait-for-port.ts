import { connect } from "node:net";
import { until } from "./until.ts";

/** Resolves once something accepts TCP connections on 127.0.0.1:port; throws after timeoutMs. */
export async function waitForPort(port: number, what: string, timeoutMs = 10_000): Promise<void> {
  await until(
    () =>
      new Promise<boolean>((resolve) => {
        const socket = connect({ host: "127.0.0.1", port });
        socket.once("connect", () => {
          socket.destroy();
          resolve(true);
        });
        socket.once("error", () => resolve(false));
      }),
    { what: `${what} to listen on port ${port}`, timeoutMs },
  );
}
