/** Types for hf-texts.mjs (fixed texts of the simulated `hf`). */

export declare const HF_VERSION: string;
export declare const SKILL_HINT: string;
export declare const HF_HELP: string;
export declare const HF_DOWNLOAD_HELP: string;
export declare const HUGGINGFACE_CLI_TEXT: string;
