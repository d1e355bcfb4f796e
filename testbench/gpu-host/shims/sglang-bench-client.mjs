/**
 * The requests of the simulated `python -m sglang.bench_serving`: one streaming HTTP request per
 * prompt (node:http) in the body shape of each backend, timed like bench_serving's request functions
 * (TTFT, inter-token latencies), and the errors requests/aiohttp print when the server is down.
 */
import { request as httpRequest } from "node:http";
import { PROG } from "./sglang-bench-args.mjs";

// HTTP ------------------------------------------------------------------------------------------
/**
 * @param {string} url
 * @param {{method?:string, body?:unknown}} opts
 * @param {((line:string)=>void) | null} onLine
 * @returns {Promise<{status:number, reason:string, body:string}>}
 */
export function httpCall(url, opts, onLine) {
  const u = new URL(url);
  const hostname = u.hostname === "0.0.0.0" || u.hostname === "localhost" ? "127.0.0.1" : u.hostname;
  const payload = opts.body === undefined ? null : JSON.stringify(opts.body);
  const headers = { "content-type": "application/json" };
  if (process.env.OPENAI_API_KEY) headers.authorization = `Bearer ${process.env.OPENAI_API_KEY}`;
  if (payload !== null) headers["content-length"] = String(Buffer.byteLength(payload));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        hostname,
        port: u.port || 80,
        path: `${u.pathname}${u.search}`,
        method: opts.method ?? "GET",
        headers,
        agent: false,
      },
      (res) => {
        let body = "";
        let pending = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          body += chunk;
          if (onLine) {
            pending += chunk;
            let idx = pending.indexOf("\n");
            while (idx >= 0) {
              const line = pending.slice(0, idx).trim();
              pending = pending.slice(idx + 1);
              if (line !== "") onLine(line);
              idx = pending.indexOf("\n");
            }
          }
        });
        res.on("end", () => {
          if (onLine && pending.trim() !== "") onLine(pending.trim());
          resolve({ status: res.statusCode ?? 0, reason: res.statusMessage ?? "", body });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    if (payload !== null) req.write(payload);
    req.end();
  });
}

/** @param {string} url @param {any} err */
export function requestsError(url, err) {
  const u = new URL(url);
  const code =
    err?.code === "ECONNREFUSED" ? "[Errno 111] Connection refused" : (err?.message ?? String(err));
  return `HTTPConnectionPool(host='${u.hostname}', port=${u.port || 80}): Max retries exceeded with url: ${u.pathname} (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3a2c1e5d90>: Failed to establish a new connection: ${code}'))`;
}

/** @param {string} url @param {any} err */
function aiohttpError(url, err) {
  const u = new URL(url);
  const host = u.hostname;
  const port = u.port || 80;
  if (err?.code === "ECONNREFUSED") {
    return `aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host ${host}:${port} ssl:default [Connect call failed ('${host === "0.0.0.0" ? "127.0.0.1" : host}', ${port})]`;
  }
  return `aiohttp.client_exceptions.ClientOSError: ${err?.message ?? String(err)}`;
}

/**
 * One benchmark request; mirrors bench_serving's request functions.
 * @returns {Promise<{success:boolean, generated:string, latency:number, ttft:number, itl:number[], outputLen:number, promptLen:number, error:string, start:number, tokenTimes:number[]}>}
 */
export async function sendOne(backend, apiUrl, model, prompt, promptLen, outputLen, args, extraBody) {
  const stream = !args.disable_stream;
  const ignoreEos = !args.disable_ignore_eos;
  const out = {
    success: false,
    generated: "",
    latency: 0,
    ttft: 0,
    itl: /** @type {number[]} */ ([]),
    outputLen: 0,
    promptLen,
    error: "",
    start: performance.now(),
    tokenTimes: /** @type {number[]} */ ([]),
  };
  const st = performance.now();
  let mostRecent = st;
  let lastOutputLen = 0;
  let body;
  const native = backend === "sglang" || backend === "sglang-native";
  const chat = backend.endsWith("-chat");
  if (native) {
    body = {
      [Array.isArray(prompt) ? "input_ids" : "text"]: prompt,
      sampling_params: { temperature: 0.0, max_new_tokens: outputLen, ignore_eos: ignoreEos },
      stream,
      lora_path: null,
      return_logprob: args.return_logprob,
      logprob_start_len: -1,
      ...extraBody,
    };
  } else if (chat) {
    body = {
      model,
      messages: [{ role: "user", content: prompt }],
      temperature: 0.0,
      max_tokens: outputLen,
      stream,
      ignore_eos: ignoreEos,
      ...extraBody,
    };
  } else {
    body = {
      model,
      prompt,
      temperature: 0.0,
      best_of: 1,
      max_tokens: outputLen,
      stream,
      ignore_eos: ignoreEos,
      ...extraBody,
    };
  }
  let outLen = outputLen;
  try {
    const res = await httpCall(
      apiUrl,
      { method: "POST", body },
      stream
        ? (line) => {
            const chunk = line.startsWith("data: ")
              ? line.slice(6)
              : line.startsWith("data:")
                ? line.slice(5)
                : line;
            if (chunk === "[DONE]") return;
            let data;
            try {
              data = JSON.parse(chunk);
            } catch {
              return;
            }
            const ts = performance.now();
            if (native) {
              if (!data.text) return;
              out.generated = data.text;
              outLen = data.meta_info?.completion_tokens ?? outLen;
              if (out.ttft === 0) {
                out.ttft = (ts - st) / 1000;
              } else {
                const n = outLen - lastOutputLen;
                if (n === 0) return;
                const adjust = (ts - mostRecent) / 1000 / n;
                for (let k = 0; k < n; k++) out.itl.push(adjust);
              }
              for (let k = lastOutputLen; k < outLen; k++) out.tokenTimes.push(ts);
              mostRecent = ts;
              lastOutputLen = outLen;
              out.latency = (ts - st) / 1000;
              return;
            }
            const content = chat ? data.choices?.[0]?.delta?.content : data.choices?.[0]?.text;
            if (content) {
              if (out.ttft === 0) out.ttft = (ts - st) / 1000;
              else out.itl.push((ts - mostRecent) / 1000);
              out.tokenTimes.push(ts);
              mostRecent = ts;
              out.generated += content;
            }
            if (data.usage?.completion_tokens) outLen = data.usage.completion_tokens;
            out.latency = (ts - st) / 1000;
          }
        : null,
    );
    if (res.status === 200) {
      if (!stream) {
        const json = JSON.parse(res.body);
        const end = performance.now();
        out.latency = (end - st) / 1000;
        out.ttft = out.latency;
        if (native) {
          out.generated = json.text;
          outLen = json.meta_info?.completion_tokens ?? outLen;
        } else {
          out.generated = chat ? json.choices[0].message.content : json.choices[0].text;
          outLen = json.usage?.completion_tokens ?? outLen;
        }
        for (let k = 0; k < outLen; k++) out.tokenTimes.push(end);
      } else if (out.latency === 0) {
        out.latency = (performance.now() - st) / 1000;
      }
      out.success = true;
      out.outputLen = outLen;
    } else {
      out.error = res.reason || "";
    }
  } catch (err) {
    out.error = `Traceback (most recent call last):\n  File "${PROG}", line 380, in async_request_sglang_generate\n    async with session.post(\n${aiohttpError(apiUrl, err)}\n`;
  }
  return out;
}
