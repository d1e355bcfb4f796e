/**
 * The keys that appear more than once in one object of a JSON text, as `path.key` (JSON.parse keeps the
 * last silently, so a log line with `"name":"worker","name":"monitor"` parses fine and still breaks log
 * tools that refuse it). A small scanner of the raw text: strings, objects, arrays and scalars.
 */
export function duplicateKeys(json: string): string[] {
  const found: string[] = [];
  let at = 0;
  const space = () => {
    while (at < json.length && /\s/.test(json[at] ?? "")) at += 1;
  };
  const string = (): string => {
    const start = at;
    at += 1; // the opening quote
    while (json[at] !== '"') {
      if (at >= json.length) throw new Error(`unterminated string at ${start}`);
      at += json[at] === "\\" ? 2 : 1;
    }
    at += 1;
    return JSON.parse(json.slice(start, at)) as string;
  };
  const value = (path: string): void => {
    space();
    const c = json[at];
    if (c === "{") {
      at += 1;
      const seen = new Set<string>();
      space();
      if (json[at] === "}") {
        at += 1;
        return;
      }
      for (;;) {
        space();
        const key = string();
        if (seen.has(key)) found.push(path === "" ? key : `${path}.${key}`);
        seen.add(key);
        space();
        at += 1; // the colon
        value(path === "" ? key : `${path}.${key}`);
        space();
        if (json[at++] === "}") return;
      }
    }
    if (c === "[") {
      at += 1;
      space();
      if (json[at] === "]") {
        at += 1;
        return;
      }
      for (let i = 0; ; i += 1) {
        value(`${path}[${i}]`);
        space();
        if (json[at++] === "]") return;
      }
    }
    if (c === '"') {
      string();
      return;
    }
    const scalar = /^(-?[0-9.eE+-]+|true|false|null)/.exec(json.slice(at));
    if (scalar === null) throw new Error(`not JSON at ${at}: ${json.slice(at, at + 20)}`);
    at += scalar[0].length;
  };
  value("");
  return found;
}
