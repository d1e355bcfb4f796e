import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { asCodedError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { FleetView } from "../status/fleet-view.ts";
import { FLEET_CSS, FLEET_JS } from "./fleet-assets.ts";
import { FLEET_PATH, renderFleetBody, renderFleetPage, renderLogin } from "./fleet-page.ts";
import type { Html } from "./html.ts";

/**
 * Who may read the fleet: the ops server's operator tokens (src/http/ops-auth.ts, `OpsAuth`), asked for
 * the `read` scope. The page hands it the token from its cookie as a bearer token.
 */
export interface FleetAuth {
  authorize(
    req: { headers: IncomingHttpHeaders },
    scope: "read",
  ):
    | { ok: true; operator: { name: string } }
    | { ok: false; status: 401 | 403; error: { code: string; message: string; fix: string } };
}

export interface FleetRoutesOptions {
  auth: FleetAuth;
  /** The fleet as the store has it now (src/status/fleet-view.ts). */
  view: () => Promise<FleetView>;
  /** How often the open page asks for the fleet again (default 5 s). */
  refreshMs?: number;
  log: Logger;
}

const COOKIE = "modelswap_fleet";
/** How long a browser stays signed in. */
const SESSION_SECONDS = 12 * 3600;
/** The sign-in form's body: a token and its field name, nothing near this size. */
const MAX_FORM_BYTES = 4096;

/**
 * Every answer of the page: nothing inline runs, nothing is framed or cached, no address is sent to another
 * site (same-origin, not no-referrer: with no-referrer the browser sends a form's Origin as "null").
 */
const HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
};

/**
 * The fleet page on the ops server: `GET /fleet` (the page), `GET /fleet/live` (its body, which the page's
 * script fetches every few seconds), `GET|POST /fleet/login` (a form for the operator token, which is kept
 * in an HttpOnly, SameSite=Strict cookie of the page's path; never in a URL), `POST /fleet/logout`, and
 * the page's script and stylesheet. Read-only: nothing here changes the fleet. A request may also carry
 * `Authorization: Bearer <token>` itself.
 */
export function createFleetRoutes(
  options: FleetRoutesOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const refreshMs = options.refreshMs ?? 5000;
  return (req, res) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname.replace(/\/+$/, "");
    const method = req.method ?? "GET";
    const route = `${method} ${path}`;
    if (route === `GET ${FLEET_PATH}/fleet.css`) return asset(res, "text/css", FLEET_CSS);
    if (route === `GET ${FLEET_PATH}/fleet.js`) return asset(res, "text/javascript", FLEET_JS);
    if (route === `GET ${FLEET_PATH}/login`) return page(res, 200, renderLogin());
    if (route === `POST ${FLEET_PATH}/login`) return void login(req, res, options);
    if (route === `POST ${FLEET_PATH}/logout`) {
      if (!sameOrigin(req)) return page(res, 403, renderLogin(CROSS_SITE));
      res.setHeader("set-cookie", cookie(req, "", 0));
      return redirect(res, `${FLEET_PATH}/login`);
    }
    const live = route === `GET ${FLEET_PATH}/live`;
    if (!live && route !== `GET ${FLEET_PATH}`)
      return text(res, 404, "not found: the fleet page is /fleet\n");
    const allowed = options.auth.authorize(withToken(req), "read");
    if (!allowed.ok) {
      if (live) return text(res, allowed.status, `${allowed.error.message}: ${allowed.error.fix}\n`);
      return redirect(res, `${FLEET_PATH}/login`);
    }
    options
      .view()
      .then((view) => {
        const who = allowed.operator.name;
        page(res, 200, live ? renderFleetBody(view) : renderFleetPage(view, who, refreshMs));
      })
      .catch((error: unknown) => {
        const coded = asCodedError(error);
        options.log.error(
          { code: coded.code, err: coded.message },
          "the fleet page could not read the fleet",
        );
        // what went wrong is in the log: an error's text (a Redis address, say) is not the page's to show
        text(
          res,
          503,
          `${coded.code}: the fleet could not be read from Redis (the bot's log says why); ${live ? "the page tries again" : "reload to try again"}\n`,
        );
      });
  };
}

const CROSS_SITE = {
  message: "this form was sent from another site",
  fix: "open the fleet page itself and sign in there",
};

/** Checks the posted token as a bearer token would be; a good one sets the cookie and opens the page. */
async function login(req: IncomingMessage, res: ServerResponse, options: FleetRoutesOptions): Promise<void> {
  if (!sameOrigin(req)) return page(res, 403, renderLogin(CROSS_SITE));
  const form = await readForm(req).catch(() => undefined);
  const token = form?.get("token")?.trim() ?? "";
  if (form === undefined || token === "" || /\s/.test(token))
    return page(
      res,
      400,
      renderLogin({
        message:
          token === "" ? "no token was sent" : "that is not a token: a token is one word, without spaces",
        fix: "paste your operator token (from operators: in the config, via your admin) into the field",
      }),
    );
  const allowed = options.auth.authorize({ headers: { authorization: `Bearer ${token}` } }, "read");
  if (!allowed.ok) {
    options.log.warn({ code: allowed.error.code }, "fleet page: a sign-in was refused");
    return page(res, allowed.status, renderLogin(allowed.error));
  }
  options.log.info({ operator: allowed.operator.name }, "fleet page: signed in");
  res.setHeader("set-cookie", cookie(req, token, SESSION_SECONDS));
  redirect(res, FLEET_PATH);
}

/** The request's own bearer token, else the page's cookie as one. */
function withToken(req: IncomingMessage): { headers: IncomingHttpHeaders } {
  if (req.headers.authorization !== undefined) return req;
  const token = cookieValue(req.headers.cookie, COOKIE);
  return { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } };
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) {
      try {
        return decodeURIComponent(value.join("="));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

function cookie(req: IncomingMessage, value: string, maxAge: number): string {
  const secure = (req.socket as TLSSocket).encrypted === true || req.headers["x-forwarded-proto"] === "https";
  return `${COOKIE}=${encodeURIComponent(value)}; Path=${FLEET_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`;
}

/** A form posted from another site is refused (the browser says where it came from in Origin). */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined || origin === "null") return origin === undefined;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  if (!(req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded"))
    throw new Error("not a form");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new Error("form too large");
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

function page(res: ServerResponse, status: number, body: Html): void {
  res.writeHead(status, { ...HEADERS, "content-type": "text/html; charset=utf-8" });
  res.end(body.text);
}

function asset(res: ServerResponse, type: string, body: string): void {
  res.writeHead(200, {
    ...HEADERS,
    "content-type": `${type}; charset=utf-8`,
    "cache-control": "max-age=300",
  });
  res.end(body);
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { ...HEADERS, "content-type": "text/plain; charset=utf-8" });
  res.end(body);
}

function redirect(res: ServerResponse, to: string): void {
  res.writeHead(303, { ...HEADERS, location: to });
  res.end();
}

/**
 * A read shared by everyone who asks within `ms` of its start (and while it runs): ten open pages cost
 * the store one read a second, not ten.
 */
export function sharedRead<T>(ms: number, read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (last !== undefined && now - last.at < ms) return last.value;
    const value = read();
    last = { at: now, value };
    // a failed read is not kept: the next page asks again
    value.catch(() => {
      if (last?.value === value) last = undefined;
    });
    return value;
  };
}
