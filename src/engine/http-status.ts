import { type ShellCommand, sh } from "../host/shell-quote.ts";
import { curlStatus } from "./engine.ts";

/**
 * The HTTP status of one request to the host's loopback, as `curlStatus` gives it (the status on a line,
 * `000` when nothing answered; exit 0, or curl's 28 when it timed out and 52 when the server closed the
 * connection without a status line), but asked by bash itself through `/dev/tcp`: no process is started.
 *
 * Why: the health monitor asks every host every interval, and starting curl was most of what a check cost
 * the host (19 CPU ms of its 53 on the bench machine, docs/benchmarks.md): at a thousand hosts a second's
 * worth of checks cost more than a core in curl alone. When the connection cannot be opened (nothing
 * listens, or this bash was built without network redirections) curl asks instead, so a failing answer
 * says exactly what curl says (connection refused is curl's 7).
 *
 * The request is what curl sends (HTTP/1.1, Host, and for a POST a Content-Length), with `Connection:
 * close`; SGLang and vLLM serve through uvicorn. Only the status line is read: the status is its second
 * word (RFC 9112 section 4), whatever framing the body has. Bash 4.1 or later (`exec {fd}<>`); `read -t` takes fractions.
 * `body`, when given, is sent as a JSON POST; it must be ASCII (its length is counted in characters).
 * SIGPIPE is ignored while the request is written: a server that closed or reset the connection first
 * would otherwise kill the bash that asks (printf is a builtin), the monitor's kept shell among them.
 */
export function httpStatus(port: number, path: string, timeoutSeconds: number, body?: string): ShellCommand {
  const fallback = curlStatus(`http://127.0.0.1:${port}${path}`, timeoutSeconds, body);
  const method = body === undefined ? "GET" : "POST";
  return sh`__modelswap_http() {
  local fd code rest rc
  if ! { exec {fd}<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null; then
    ${fallback}
    return
  fi
  trap '' PIPE
  printf '%s %s HTTP/1.1\\r\\nHost: 127.0.0.1:%s\\r\\nContent-Type: application/json\\r\\nContent-Length: %s\\r\\nConnection: close\\r\\n\\r\\n%s' "$2" "$3" "$1" "\${#5}" "$5" >&"$fd" 2>/dev/null
  trap - PIPE
  IFS=' ' read -r -t "$4" _ code rest <&"$fd"
  rc=$?
  exec {fd}>&-
  code=\${code%$'\\r'}
  if [ "$rc" -eq 0 ] && [ -n "$code" ]; then echo "$code"; return 0; fi
  echo 000
  if [ "$rc" -gt 128 ]; then return 28; fi
  return 52
}; __modelswap_http ${port} ${method} ${path} ${timeoutSeconds} ${body ?? ""}`;
}
