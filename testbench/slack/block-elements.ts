import type { Block, JsonObject } from "./types.ts";

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The clickable element with this action_id in a message's blocks, with its block. */
export function findElement(
  blocks: Block[] | undefined,
  actionId: string,
): { block: Block; element: JsonObject } | undefined {
  for (const block of blocks ?? []) {
    const candidates: unknown[] = [];
    if (Array.isArray(block.elements)) candidates.push(...block.elements);
    if (block.accessory !== undefined) candidates.push(block.accessory);
    for (const element of candidates) {
      if (isObject(element) && element.action_id === actionId) return { block, element };
    }
  }
  return undefined;
}

export function actionIds(blocks: Block[] | undefined): string[] {
  const ids: string[] = [];
  for (const block of blocks ?? []) {
    const candidates: unknown[] = [];
    if (Array.isArray(block.elements)) candidates.push(...block.elements);
    if (block.accessory !== undefined) candidates.push(block.accessory);
    for (const element of candidates) {
      if (isObject(element) && typeof element.action_id === "string") ids.push(element.action_id);
    }
  }
  return ids;
}

export function plainText(value: unknown): string {
  return isObject(value) && typeof value.text === "string" ? value.text : "";
}
