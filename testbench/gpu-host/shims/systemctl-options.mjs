/** systemctl's command line (systemd 255): options and positional arguments, as systemctl.mjs uses them. */

/**
 * Parses systemctl's argv. `--version` prints systemd's version and exits at once, as systemctl does.
 * @param {string[]} argv
 */
export function parseSystemctlArgs(argv) {
  const opts = {
    now: false,
    value: false,
    properties: [],
    all: false,
    types: [],
    legend: true,
    plain: false,
    quiet: false,
    lines: 10,
    signal: "SIGTERM",
    noReload: false,
    states: [],
  };
  const positional = [];
  let badOption = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const takeValue = () => {
      const v = argv[i + 1];
      i++;
      return v ?? "";
    };
    if (a === "--") {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (a === "--now") opts.now = true;
    else if (a === "--value") opts.value = true;
    else if (a === "-p" || a === "--property") opts.properties.push(...takeValue().split(","));
    else if (a.startsWith("--property=")) opts.properties.push(...a.slice(11).split(","));
    else if (a.startsWith("-p") && a.length > 2) opts.properties.push(...a.slice(2).split(","));
    else if (a === "-P") {
      opts.value = true;
      opts.properties.push(...takeValue().split(","));
    } else if (a.startsWith("-P") && a.length > 2) {
      opts.value = true;
      opts.properties.push(...a.slice(2).split(","));
    } else if (a === "-a" || a === "--all") opts.all = true;
    else if (a === "-t" || a === "--type") opts.types.push(...takeValue().split(","));
    else if (a.startsWith("--type=")) opts.types.push(...a.slice(7).split(","));
    else if (a === "--state") opts.states.push(...takeValue().split(","));
    else if (a.startsWith("--state=")) opts.states.push(...a.slice(8).split(","));
    else if (a === "--no-legend") opts.legend = false;
    else if (a === "--legend=false" || a === "--legend=no") opts.legend = false;
    else if (a === "--plain") opts.plain = true;
    else if (a === "-q" || a === "--quiet") opts.quiet = true;
    else if (a === "-n" || a === "--lines") opts.lines = Number(takeValue());
    else if (a.startsWith("--lines=")) opts.lines = Number(a.slice(8));
    else if (a.startsWith("-n") && /^-n\d+$/.test(a)) opts.lines = Number(a.slice(2));
    else if (a === "-s" || a === "--signal") opts.signal = takeValue();
    else if (a.startsWith("--signal=")) opts.signal = a.slice(9);
    else if (a === "--no-reload") opts.noReload = true;
    else if (a === "--version") {
      process.stdout.write("systemd 255 (255.4-1ubuntu8)\n");
      process.exit(0);
    } else if (
      [
        "--no-pager",
        "--no-block",
        "--system",
        "--full",
        "-l",
        "--no-ask-password",
        "--wait",
        "--force",
        "-f",
        "--runtime",
        "--show-types",
      ].includes(a) ||
      a.startsWith("--kill-whom=") ||
      a.startsWith("--output=") ||
      a.startsWith("--job-mode=")
    ) {
      // accepted, no effect in the simulation
    } else if (a.startsWith("-") && a !== "-") {
      badOption = a;
      break;
    } else positional.push(a);
  }
  return { opts, positional, badOption };
}
