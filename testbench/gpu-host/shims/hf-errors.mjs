/**
 * Exceptions of the simulated `hf` (huggingface_hub 1.33): the same classes, hierarchy and
 * messages as huggingface_hub's `errors.py` / `utils/_http.py` (`hf_raise_for_status`), and the
 * CLI's formatting of them (`cli/_errors.py`). Not a command itself.
 */

/** Base: an exception with the Python type name it stands for (printed in tracebacks). */
export class PyError extends Error {
  /** @param {string} pyType e.g. "httpx.ConnectError" @param {string} message */
  constructor(pyType, message) {
    super(message);
    this.pyType = pyType;
  }
}

// --- httpx transport errors -------------------------------------------------------------------

export class ConnectError extends PyError {
  constructor(message) {
    super("httpx.ConnectError", message);
  }
}
export class ReadTimeout extends PyError {
  constructor(message = "timed out") {
    super("httpx.ReadTimeout", message);
  }
}
export class RemoteProtocolError extends PyError {
  constructor(message) {
    super("httpx.RemoteProtocolError", message);
  }
}

/** Errors `_DEFAULT_RETRY_ON_EXCEPTIONS` covers (TimeoutException, NetworkError, RemoteProtocolError). */
export function isTransportError(error) {
  return (
    error instanceof ConnectError || error instanceof ReadTimeout || error instanceof RemoteProtocolError
  );
}

// --- Hub HTTP errors ---------------------------------------------------------------------------

/** `HfHubHTTPError`: carries the response (status, headers, url). */
export class HfHubHTTPError extends PyError {
  constructor(
    message,
    response,
    { repoType = null, repoId = null, pyType = "huggingface_hub.errors.HfHubHTTPError" } = {},
  ) {
    super(pyType, message);
    this.response = response;
    this.repoType = repoType;
    this.repoId = repoId;
  }
}
export class RepositoryNotFoundError extends HfHubHTTPError {
  constructor(message, response, info) {
    super(message, response, { ...info, pyType: "huggingface_hub.errors.RepositoryNotFoundError" });
  }
}
export class GatedRepoError extends RepositoryNotFoundError {
  constructor(message, response, info) {
    super(message, response, info);
    this.pyType = "huggingface_hub.errors.GatedRepoError";
  }
}
export class RevisionNotFoundError extends HfHubHTTPError {
  constructor(message, response, info) {
    super(message, response, { ...info, pyType: "huggingface_hub.errors.RevisionNotFoundError" });
  }
}
export class RemoteEntryNotFoundError extends HfHubHTTPError {
  constructor(message, response, info) {
    super(message, response, { ...info, pyType: "huggingface_hub.errors.RemoteEntryNotFoundError" });
  }
}

// --- other errors ------------------------------------------------------------------------------

export class LocalEntryNotFoundError extends PyError {
  constructor(message, cause) {
    super("huggingface_hub.errors.LocalEntryNotFoundError", message);
    this.pyCause = cause;
  }
}
export class OSErrorPy extends PyError {
  constructor(message) {
    super("OSError", message);
  }
}
export class ValueErrorPy extends PyError {
  constructor(message) {
    super("ValueError", message);
  }
}
export class DryRunError extends PyError {
  constructor(message, cause) {
    super("huggingface_hub.errors.DryRunError", message);
    this.pyCause = cause;
  }
}
/** `CLIError`: printed as is. */
export class CLIError extends PyError {
  constructor(message) {
    super("huggingface_hub.errors.CLIError", message);
  }
}
/** A click usage error (exit code 2). */
export class UsageError extends Error {
  constructor(message, usage, helpHint) {
    super(message);
    this.usage = usage;
    this.helpHint = helpHint;
  }
}

// --- hf_raise_for_status -----------------------------------------------------------------------

const REASONS = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  416: "Requested Range Not Satisfiable",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** (repoType, repoId) from an API url, like `_parse_repo_info_from_url` (resolve URLs give nulls). */
function repoInfoFromUrl(url) {
  const match = /^https?:\/\/[^/]+\/api\/(models|datasets|spaces)\/([^/?]+)(?:\/([^/?]+))?/.exec(url);
  if (!match) return { repoType: null, repoId: null };
  const repoType = { models: "model", datasets: "dataset", spaces: "space" }[match[1]];
  const subpaths = new Set([
    "resolve",
    "tree",
    "blob",
    "raw",
    "refs",
    "commit",
    "discussions",
    "settings",
    "revision",
  ]);
  const second = match[3];
  const repoId =
    second && !subpaths.has(second)
      ? `${decodeURIComponent(match[2])}/${decodeURIComponent(second)}`
      : decodeURIComponent(match[2]);
  return { repoType, repoId };
}

/** `_format`: append the server's message(s) and the request id. */
function formatMessage(custom, response) {
  const serverErrors = [];
  const fromHeader = response.headers["x-error-message"];
  if (fromHeader) serverErrors.push(fromHeader);
  const text = response.body ? response.body.toString("utf8") : "";
  try {
    const data = JSON.parse(text);
    if (data && typeof data === "object") {
      if (Array.isArray(data.error)) serverErrors.push(...data.error);
      else if (data.error !== undefined && data.error_description !== undefined)
        serverErrors.push(`${data.error}: ${data.error_description}`);
      else if (data.error !== undefined) serverErrors.push(data.error);
      else if (data.error_description !== undefined) serverErrors.push(data.error_description);
    }
  } catch {
    const contentType = response.headers["content-type"] ?? "";
    if (text && !contentType.toLowerCase().includes("html")) serverErrors.push(text);
  }
  const unique = [...new Set(serverErrors.map((l) => String(l).trim()).filter((l) => l !== ""))];
  const serverMessage = unique.join("\n");
  let message = custom;
  if (serverMessage && !custom.toLowerCase().includes(serverMessage.toLowerCase())) {
    message += custom.includes("\n\n") ? `\n${serverMessage}` : `\n\n${serverMessage}`;
  }
  const requestId = response.headers["x-request-id"];
  if (requestId && !message.toLowerCase().includes(String(requestId).toLowerCase())) {
    const idMessage = ` (Request ID: ${requestId})`;
    const nl = message.indexOf("\n");
    message = nl >= 0 ? message.slice(0, nl) + idMessage + message.slice(nl) : message + idMessage;
  }
  return message.trim();
}

/**
 * Throws the huggingface_hub exception for an error response (no-op for 2xx/3xx).
 * @param {{status: number, headers: Record<string, string>, url: string, body?: Buffer, requestRange?: string}} response
 */
export function hfRaiseForStatus(response) {
  const { status, url } = response;
  if (status < 400) return;
  const code = response.headers["x-error-code"];
  const errorMessage = response.headers["x-error-message"];
  const info = repoInfoFromUrl(url);
  if (code === "RevisionNotFound") {
    throw new RevisionNotFoundError(
      formatMessage(`${status} Client Error.\n\nRevision Not Found for url: ${url}.`, response),
      response,
      info,
    );
  }
  if (code === "EntryNotFound") {
    throw new RemoteEntryNotFoundError(
      formatMessage(`${status} Client Error.\n\nEntry Not Found for url: ${url}.`, response),
      response,
      info,
    );
  }
  if (code === "GatedRepo") {
    throw new GatedRepoError(
      formatMessage(`${status} Client Error.\n\nCannot access gated repo for url ${url}.`, response),
      response,
      info,
    );
  }
  const isRepoApi = /^https:\/\/[^/]+(\/api\/(models|datasets|spaces)\/(.+)|\/(.+)\/resolve\/(.+))/.test(url);
  if (
    code === "RepoNotFound" ||
    (status === 401 && errorMessage !== "Invalid credentials in Authorization header" && isRepoApi)
  ) {
    throw new RepositoryNotFoundError(
      formatMessage(
        `${status} Client Error.\n\nRepository Not Found for url: ${url}.\nPlease make sure you specified the correct \`repo_id\` and \`repo_type\`.\nIf you are trying to access a private or gated repo, make sure you are authenticated and your token has the required permissions.\nFor more details, see https://huggingface.co/docs/huggingface_hub/authentication`,
        response,
      ),
      response,
      info,
    );
  }
  if (status === 400) throw new HfHubHTTPError(formatMessage("\n\nBad request:", response), response);
  if (status === 403) {
    throw new HfHubHTTPError(
      formatMessage(
        `\n\n${status} Forbidden: ${errorMessage}.\nCannot access content at: ${url}.\nMake sure your token has the correct permissions.`,
        response,
      ),
      response,
    );
  }
  if (status === 429)
    throw new HfHubHTTPError(formatMessage(`\n\n429 Too Many Requests for url: ${url}.`, response), response);
  if (status === 416) {
    const base = `Client error '416 ${REASONS[416]}' for url '${url}'\nFor more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/416`;
    throw new HfHubHTTPError(
      formatMessage(
        `${base}. Requested range: ${response.requestRange}. Content-Range: ${response.headers["content-range"]}.`,
        response,
      ),
      response,
    );
  }
  const kind = status >= 500 ? "Server error" : "Client error";
  const base = `${kind} '${status} ${REASONS[status] ?? ""}' for url '${url}'\nFor more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/${status}`;
  throw new HfHubHTTPError(formatMessage(base, response), response);
}

// --- CLI formatting (cli/_errors.py) -----------------------------------------------------------

function capitalize(s) {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** The CLI's one-message rendering of a known exception, or null (then: traceback). */
export function formatKnownException(error) {
  if (error instanceof GatedRepoError) {
    const label = error.repoType ?? "repository";
    return error.repoId
      ? `Access denied. ${capitalize(label)} '${error.repoId}' requires approval.`
      : `Access denied. This ${label} requires approval.`;
  }
  if (error instanceof RepositoryNotFoundError) {
    const label = error.repoType ? capitalize(error.repoType) : "Repository";
    let msg = error.repoId ? `${label} '${error.repoId}' not found.` : `${label} not found.`;
    msg +=
      "\nIf the repo is private, make sure you are authenticated and your token has the required permissions.";
    msg += "\nIf the repo does not exist, create it with: ";
    if (error.repoId) {
      const typeFlag = error.repoType && error.repoType !== "model" ? ` --type ${error.repoType}` : "";
      msg += `hf repos create ${error.repoId}${typeFlag}`;
    } else {
      msg += "hf repos create <repo_id>";
    }
    return msg;
  }
  if (error instanceof RevisionNotFoundError) {
    const label = error.repoType ?? "repository";
    return error.repoId
      ? `Revision not found in ${label} '${error.repoId}'.`
      : `Revision not found in ${label}. Check the revision parameter.`;
  }
  if (error instanceof RemoteEntryNotFoundError) {
    const label = error.repoType ?? "repository";
    let msg = error.repoId ? `File not found in ${label} '${error.repoId}'.` : `File not found in ${label}.`;
    if (error.response?.url) msg += `\nURL: ${error.response.url}`;
    return msg;
  }
  if (error instanceof LocalEntryNotFoundError) {
    const cause = error.pyCause;
    return cause !== undefined && cause !== null
      ? `Local entry not found. ${cause.message}`
      : `Local entry not found. ${error.message}`;
  }
  if (error instanceof HfHubHTTPError) return error.message;
  if (error instanceof ValueErrorPy) return `Invalid value. ${error.message}`;
  if (error instanceof CLIError) return error.message;
  return null;
}

/** What Python prints for an uncaught exception (shortened traceback, same last line). */
export function traceback(error) {
  const type = error instanceof PyError ? error.pyType : `builtins.${error?.name ?? "Exception"}`;
  const lines = ["Traceback (most recent call last):"];
  lines.push(
    '  File "/usr/local/bin/hf", line 10, in <module>',
    "    sys.exit(main())",
    "             ^^^^^^",
  );
  lines.push(
    '  File "/usr/local/lib/python3.12/dist-packages/huggingface_hub/cli/hf.py", line 128, in main',
    "    app()",
  );
  lines.push("  ...");
  if (error instanceof PyError && error.pyCause) {
    const cause = error.pyCause;
    const causeType = cause instanceof PyError ? cause.pyType : "Exception";
    return [
      ...lines,
      `${causeType}: ${cause.message}`,
      "",
      "The above exception was the direct cause of the following exception:",
      "",
      "Traceback (most recent call last):",
      "  ...",
      `${type}: ${error.message}`,
    ].join("\n");
  }
  const message = error instanceof Error ? error.message : String(error);
  return [...lines, `${type}: ${message}`].join("\n");
}
