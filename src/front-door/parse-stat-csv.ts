import { badAnswer } from "./parse-servers-state.ts";

/**
 * `show stat` in its CSV format, as HAProxy 2.6 documents it in doc/management.txt, section 9.1 "CSV
 * format" (github haproxy/haproxy, tag v2.6.0): a first line `# pxname,svname,…` naming the columns, then
 * one line per frontend, backend, server and listener, `"` quoting only ambiguous text (`""` inside),
 * and an empty line at the end "so that the reader knows the output has not been truncated". Rows are
 * returned as column → text, named by that header (fields after the `-` column may vary by version).
 */
export function parseStatCsv(text: string): Record<string, string>[] {
  if (!text.startsWith("# ")) throw badAnswer(`show stat did not begin with its "# pxname,…" header`);
  if (!/\n\n$/.test(text)) throw badAnswer("show stat did not end with its empty line: the answer was cut");
  const [head, ...rows] = text.trimEnd().split("\n");
  const header = splitCsv(head!.slice(2));
  if (header[0] !== "pxname" || header[1] !== "svname")
    throw badAnswer(`show stat's header begins ${header.slice(0, 2).join(",")}, not pxname,svname`);
  return rows.map((row) => {
    const fields = splitCsv(row);
    return Object.fromEntries(header.map((column, i) => [column, fields[i] ?? ""]));
  });
}

function splitCsv(line: string): string[] {
  const out: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      out.push(field);
      field = "";
    } else field += c;
  }
  out.push(field);
  return out;
}
