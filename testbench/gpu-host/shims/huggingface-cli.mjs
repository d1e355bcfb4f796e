#!/usr/bin/env node
/**
 * Imitates `huggingface-cli` as installed by huggingface_hub 1.33: the old CLI is gone; it only
 * says so (all on stderr: a warning, then hints) and exits 1, whatever the arguments.
 */
import { HUGGINGFACE_CLI_TEXT } from "./hf-texts.mjs";
import { recordCall, SANDBOX_ENV } from "./sandbox.mjs";

if (process.env[SANDBOX_ENV]) recordCall("huggingface-cli", process.argv.slice(2));
process.stderr.write(HUGGINGFACE_CLI_TEXT);
process.exit(1);
