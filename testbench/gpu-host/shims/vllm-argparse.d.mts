/** The serve subcommand's description (vllm/entrypoints/cli/serve.py). */
export const SERVE_DESCRIPTION: string;
/** The epilog of `vllm <subcmd> --help` (vllm/entrypoints/utils.py VLLM_SUBCMD_PARSER_EPILOG). */
export function subcmdEpilog(subcmd: string): string;
/** `vllm serve --help[=keyword]` as FlexibleArgumentParser prints it ("" the groups, "all" every flag). */
export function formatServeHelp(usage: string, description: string, epilog: string, keyword: string): string;
