#!/usr/bin/env node
// The `modelswap` command: runs the TypeScript sources through tsx's loader (no build step needed).
import { register } from "tsx/esm/api";

register();
await import("../src/cli.ts");
