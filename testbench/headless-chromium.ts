import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket } from "ws";
import { until } from "./until.ts";

/**
 * A real headless Chromium (Debian's `chromium`, installed by scripts/bootstrap.sh), driven over the
 * DevTools protocol: pages are loaded, typed into and clicked as a person would, and read back as the
 * text a person sees (`innerText`: what CSS hides is not in it). No browser package: a WebSocket (`ws`,
 * the Slack emulator's) to the browser's own endpoint.
 *
 *     const browser = await startChromium();
 *     const page = await browser.newPage();
 *     await page.goto("http://127.0.0.1:3000/fleet");
 *     await page.waitForText(/Signed in as/, "the fleet page");
 *     await browser.close();
 */

/** Where Chromium is: CHROMIUM when set (e.g. a Chrome elsewhere), else `chromium` on the PATH. */
export function chromiumPath(): string {
  return process.env.CHROMIUM ?? "chromium";
}

export interface ChromiumOptions {
  /** The window's size in CSS pixels (default 1400×900). */
  width?: number;
  height?: number;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  method: string;
}

/** One protocol connection: commands by id, answers matched back, events to listeners. */
class Protocol {
  private next = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<(method: string, params: unknown, session?: string) => void>();

  constructor(private readonly socket: WebSocket) {
    socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as {
        id?: number;
        result?: unknown;
        error?: { message: string };
        method?: string;
        params?: unknown;
        sessionId?: string;
      };
      if (message.id !== undefined) {
        const waiting = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.error !== undefined)
          waiting?.reject(new Error(`${waiting.method}: ${message.error.message}`));
        else waiting?.resolve(message.result);
      } else if (message.method !== undefined)
        for (const listen of this.listeners) listen(message.method, message.params, message.sessionId);
    });
    socket.on("close", () => {
      for (const waiting of this.pending.values())
        waiting.reject(new Error("Chromium closed its DevTools connection"));
      this.pending.clear();
    });
  }

  send<T>(method: string, params: object = {}, sessionId?: string): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, method });
      this.socket.send(
        JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) }),
      );
    });
  }

  on(listener: (method: string, params: unknown, session?: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export class ChromiumPage {
  constructor(
    private readonly protocol: Protocol,
    private readonly session: string,
  ) {}

  private send<T>(method: string, params: object = {}): Promise<T> {
    return this.protocol.send<T>(method, params, this.session);
  }

  /** Opens `url` and waits for its load event. */
  async goto(url: string): Promise<void> {
    let loaded!: () => void;
    const load = new Promise<void>((resolve) => {
      loaded = resolve;
    });
    const off = this.protocol.on((method, _params, session) => {
      if (method === "Page.loadEventFired" && session === this.session) loaded();
    });
    try {
      const answer = await this.send<{ errorText?: string }>("Page.navigate", { url });
      if (answer.errorText !== undefined)
        throw new Error(`Chromium could not open ${url}: ${answer.errorText}`);
      await Promise.race([
        load,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error(`${url} did not load in 30 s`)), 30_000),
        ),
      ]);
    } finally {
      off();
    }
  }

  /** The value of a JavaScript expression in the page (awaited when it is a promise). */
  async evaluate<T>(expression: string): Promise<T> {
    const answer = await this.send<{
      result: { value?: unknown };
      exceptionDetails?: { text: string; exception?: { description?: string } };
    }>("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
    if (answer.exceptionDetails !== undefined)
      throw new Error(
        `in the page: ${answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text}`,
      );
    return answer.result.value as T;
  }

  /** What a person sees of the element (innerText), or of the whole page; undefined when there is none. */
  async text(selector = "body"): Promise<string | undefined> {
    return await this.evaluate<string | undefined>(
      `document.querySelector(${JSON.stringify(selector)})?.innerText ?? undefined`,
    );
  }

  /** The page's address now. */
  async url(): Promise<string> {
    return await this.evaluate<string>("location.href");
  }

  /** Waits until the visible text of `selector` matches, and returns it. */
  async waitForText(pattern: RegExp, what: string, selector = "body", timeoutMs = 20_000): Promise<string> {
    let last: string | undefined;
    try {
      return await until(
        async () => {
          const text = await this.text(selector).catch(() => undefined);
          last = text;
          return text !== undefined && pattern.test(text) ? text : undefined;
        },
        { what, timeoutMs, intervalMs: 100 },
      );
    } catch (error) {
      // what the page showed instead, so a failure says what a person would have seen
      throw new Error(
        `${error instanceof Error ? error.message : String(error)}; ${selector} showed: ${last ?? "nothing"}`,
      );
    }
  }

  /** Types into a field as a person would: focus it, then the characters. */
  async type(selector: string, text: string): Promise<void> {
    await this.evaluate(`document.querySelector(${JSON.stringify(selector)}).focus()`);
    await this.send("Input.insertText", { text });
  }

  /** A mouse click in the middle of the element. */
  async click(selector: string): Promise<void> {
    const box = await this.evaluate<{ x: number; y: number } | null>(`(() => {
      const el = document.querySelector(${JSON.stringify(selector)});
      if (el === null) return null;
      el.scrollIntoView({ block: "center" });
      const r = el.getBoundingClientRect();
      return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
    })()`);
    if (box === null) throw new Error(`nothing on the page matches ${selector}`);
    for (const type of ["mousePressed", "mouseReleased"])
      await this.send("Input.dispatchMouseEvent", {
        type,
        x: box.x,
        y: box.y,
        button: "left",
        clickCount: 1,
      });
  }

  /** A PNG of the whole page (not only the window), `width` CSS pixels wide, at most `maxHeight` high. */
  async screenshot(width: number, maxHeight = Number.POSITIVE_INFINITY): Promise<Buffer> {
    const metrics = await this.send<{ cssContentSize: { height: number } }>("Page.getLayoutMetrics");
    const height = Math.ceil(Math.min(maxHeight, metrics.cssContentSize.height));
    await this.send("Emulation.setDeviceMetricsOverride", {
      width,
      height,
      deviceScaleFactor: 1,
      mobile: false,
    });
    try {
      const shot = await this.send<{ data: string }>("Page.captureScreenshot", {
        format: "png",
        captureBeyondViewport: false,
      });
      return Buffer.from(shot.data, "base64");
    } finally {
      await this.send("Emulation.clearDeviceMetricsOverride");
    }
  }
}

export interface HeadlessChromium {
  newPage(): Promise<ChromiumPage>;
  close(): Promise<void>;
}

/**
 * Starts Chromium headless with a profile of its own (deleted by `close`). Throws, saying how to install
 * it, when there is no Chromium: a test of the page never passes without one.
 */
export async function startChromium(options: ChromiumOptions = {}): Promise<HeadlessChromium> {
  const profile = await mkdtemp(join(tmpdir(), "modelswap-chromium-"));
  const args = [
    "--headless",
    "--remote-debugging-port=0",
    `--user-data-dir=${profile}`,
    `--window-size=${options.width ?? 1400},${options.height ?? 900}`,
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-background-networking",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--mute-audio",
    // Chromium's sandbox refuses to run as root (a container, CI)
    ...(process.getuid?.() === 0 ? ["--no-sandbox"] : []),
    "about:blank",
  ];
  const child = spawn(chromiumPath(), args, { stdio: ["ignore", "ignore", "pipe"] });
  let endpoint: string;
  try {
    endpoint = await devtoolsEndpoint(child);
  } catch (error) {
    child.kill("SIGKILL");
    await rm(profile, { recursive: true, force: true });
    throw error;
  }
  const socket = new WebSocket(endpoint, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  const protocol = new Protocol(socket);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    async newPage() {
      const { targetId } = await protocol.send<{ targetId: string }>("Target.createTarget", {
        url: "about:blank",
      });
      const { sessionId } = await protocol.send<{ sessionId: string }>("Target.attachToTarget", {
        targetId,
        flatten: true,
      });
      await protocol.send("Page.enable", {}, sessionId);
      await protocol.send("Runtime.enable", {}, sessionId);
      return new ChromiumPage(protocol, sessionId);
    },
    async close() {
      await protocol.send("Browser.close").catch(() => undefined);
      socket.close();
      const killer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(killer);
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** The browser's DevTools WebSocket, as Chromium prints it on start ("DevTools listening on ws://…"). */
function devtoolsEndpoint(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let said = "";
    const timer = setTimeout(
      () => reject(new Error(`Chromium did not open its DevTools endpoint in 30 s; it said:\n${said}`)),
      30_000,
    );
    child.once("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        error.code === "ENOENT"
          ? new Error(
              `Chromium is not installed (no ${chromiumPath()} on the PATH): the fleet page is tested in a real browser. Install it with \`sudo apt-get install chromium\` (scripts/bootstrap.sh does), or set CHROMIUM to a Chromium or Chrome binary`,
            )
          : error,
      );
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(
        new Error(`Chromium exited (code ${code}) before opening its DevTools endpoint; it said:\n${said}`),
      );
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      said += chunk.toString();
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(said);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
  });
}
