/**
 * Block Kit limits that make Slack answer `invalid_blocks` (from the Block Kit reference): a message holds
 * at most 50 blocks; section text ≤ 3000 chars, ≤ 10 fields of ≤ 2000; header ≤ 150 plain_text; context
 * ≤ 10 elements, each a text object (1–3000 chars, like every text object) or an image; actions ≤ 25
 * elements; button text ≤ 75, value ≤ 2000, action_id/block_id ≤ 255; image alt_text ≤ 2000, title ≤ 2000;
 * block_id unique. Errors are worded the way Slack words them: "<problem> [json-pointer:/blocks/3/text/text]".
 * Lengths are JavaScript string lengths (UTF-16 units): never shorter than what Slack counts.
 */

const KNOWN_BLOCKS = new Set([
  "section",
  "header",
  "divider",
  "context",
  "actions",
  "image",
  "rich_text",
  "markdown",
  "input",
  "file",
  "video",
  "table",
  "context_actions",
]);

type Errors = string[];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function at(path: string): string {
  return ` [json-pointer:${path}]`;
}

function checkText(
  value: unknown,
  path: string,
  errors: Errors,
  opts: { max: number; plainOnly?: boolean; required?: boolean },
): void {
  if (value === undefined) {
    if (opts.required === true) errors.push(`missing required field: text${at(path)}`);
    return;
  }
  if (!isObject(value)) {
    errors.push(`must provide an object${at(path)}`);
    return;
  }
  const type = value.type;
  if (type !== "plain_text" && type !== "mrkdwn") {
    errors.push(`must be one of plain_text, mrkdwn${at(`${path}/type`)}`);
  } else if (opts.plainOnly === true && type !== "plain_text") {
    errors.push(`must be plain_text${at(`${path}/type`)}`);
  }
  const text = value.text;
  if (typeof text !== "string") {
    errors.push(`must provide a string${at(`${path}/text`)}`);
    return;
  }
  if (text.length === 0) errors.push(`must be more than 0 characters${at(`${path}/text`)}`);
  if (text.length > opts.max)
    errors.push(`must be less than ${opts.max + 1} characters${at(`${path}/text`)}`);
}

function checkMaxString(value: unknown, max: number, path: string, errors: Errors): void {
  if (typeof value === "string" && value.length > max) {
    errors.push(`must be less than ${max + 1} characters${at(path)}`);
  }
}

function checkElement(element: unknown, path: string, errors: Errors): void {
  if (!isObject(element)) {
    errors.push(`must provide an object${at(path)}`);
    return;
  }
  checkMaxString(element.action_id, 255, `${path}/action_id`, errors);
  if (element.type === "button") {
    checkText(element.text, `${path}/text`, errors, { max: 75, plainOnly: true, required: true });
    checkMaxString(element.value, 2000, `${path}/value`, errors);
    checkMaxString(element.url, 3000, `${path}/url`, errors);
    if (element.style !== undefined && element.style !== "primary" && element.style !== "danger") {
      errors.push(`must be one of primary, danger${at(`${path}/style`)}`);
    }
  }
}

/** A context element: a text object (limited like every text object) or an image. */
function checkContextElement(element: unknown, path: string, errors: Errors): void {
  if (!isObject(element)) {
    errors.push(`must provide an object${at(path)}`);
    return;
  }
  if (element.type === "image") {
    if (typeof element.image_url !== "string" && !isObject(element.slack_file)) {
      errors.push(`missing required field: image_url${at(path)}`);
    }
    if (typeof element.alt_text !== "string") errors.push(`missing required field: alt_text${at(path)}`);
    checkMaxString(element.image_url, 3000, `${path}/image_url`, errors);
    checkMaxString(element.alt_text, 2000, `${path}/alt_text`, errors);
    return;
  }
  checkText(element, path, errors, { max: 3000, required: true });
}

function checkBlock(block: unknown, index: number, errors: Errors, blockIds: Set<string>): void {
  const path = `/blocks/${index}`;
  if (!isObject(block)) {
    errors.push(`must provide an object${at(path)}`);
    return;
  }
  const type = block.type;
  if (typeof type !== "string" || !KNOWN_BLOCKS.has(type)) {
    errors.push(`unsupported type: ${String(type)}${at(`${path}/type`)}`);
    return;
  }
  if (block.block_id !== undefined) {
    if (typeof block.block_id !== "string") errors.push(`must provide a string${at(`${path}/block_id`)}`);
    else {
      checkMaxString(block.block_id, 255, `${path}/block_id`, errors);
      if (blockIds.has(block.block_id)) errors.push(`duplicate block_id: ${block.block_id}${at(path)}`);
      blockIds.add(block.block_id);
    }
  }
  switch (type) {
    case "header":
      checkText(block.text, `${path}/text`, errors, { max: 150, plainOnly: true, required: true });
      break;
    case "section": {
      checkText(block.text, `${path}/text`, errors, { max: 3000 });
      const fields = block.fields;
      if (block.text === undefined && fields === undefined) {
        errors.push(`must provide text or fields${at(path)}`);
      }
      if (fields !== undefined) {
        if (!Array.isArray(fields)) errors.push(`must provide an array${at(`${path}/fields`)}`);
        else {
          if (fields.length > 10) errors.push(`no more than 10 items allowed${at(`${path}/fields`)}`);
          fields.forEach((field, i) => {
            checkText(field, `${path}/fields/${i}`, errors, { max: 2000, required: true });
          });
        }
      }
      if (block.accessory !== undefined) checkElement(block.accessory, `${path}/accessory`, errors);
      break;
    }
    case "context": {
      const elements = block.elements;
      if (!Array.isArray(elements) || elements.length === 0) {
        errors.push(`must provide a non-empty array${at(`${path}/elements`)}`);
      } else {
        if (elements.length > 10) errors.push(`no more than 10 items allowed${at(`${path}/elements`)}`);
        elements.forEach((element, i) => {
          checkContextElement(element, `${path}/elements/${i}`, errors);
        });
      }
      break;
    }
    case "actions": {
      const elements = block.elements;
      if (!Array.isArray(elements) || elements.length === 0) {
        errors.push(`must provide a non-empty array${at(`${path}/elements`)}`);
      } else {
        if (elements.length > 25) errors.push(`no more than 25 items allowed${at(`${path}/elements`)}`);
        elements.forEach((element, i) => {
          checkElement(element, `${path}/elements/${i}`, errors);
        });
      }
      break;
    }
    case "image":
      if (typeof block.image_url !== "string" && !isObject(block.slack_file)) {
        errors.push(`missing required field: image_url${at(path)}`);
      }
      if (typeof block.alt_text !== "string") errors.push(`missing required field: alt_text${at(path)}`);
      checkMaxString(block.alt_text, 2000, `${path}/alt_text`, errors);
      checkMaxString(block.image_url, 3000, `${path}/image_url`, errors);
      checkText(block.title, `${path}/title`, errors, { max: 2000, plainOnly: true });
      break;
    case "markdown":
      if (typeof block.text !== "string") errors.push(`missing required field: text${at(path)}`);
      checkMaxString(block.text, 12000, `${path}/text`, errors);
      break;
    default:
      break;
  }
}

/** Errors Slack would report for these message blocks; empty when they are valid. */
export function validateBlocks(blocks: unknown): string[] {
  const errors: Errors = [];
  if (!Array.isArray(blocks)) return [`must provide an array [json-pointer:/blocks]`];
  if (blocks.length > 50) errors.push("no more than 50 items allowed [json-pointer:/blocks]");
  const blockIds = new Set<string>();
  blocks.forEach((block, i) => {
    checkBlock(block, i, errors, blockIds);
  });
  return errors;
}

/** Slack's longest top-level `text` (longer is refused with `msg_too_long`). */
export const MESSAGE_TEXT_LIMIT = 40_000;

/**
 * What Slack would answer for a message posted with this `text` and these `blocks`: `{ error }` for a
 * refusal (`no_text`, `msg_too_long`, `invalid_blocks` with its `errors`), and `warnings` for what it
 * accepts but should not be sent (blocks without a fallback `text`, which notifications and screen
 * readers need). Empty when Slack takes it as it is.
 */
export function validateMessage(message: { text?: unknown; blocks?: unknown }): {
  error?: "no_text" | "msg_too_long" | "invalid_blocks";
  errors: string[];
  warnings: string[];
} {
  const text = typeof message.text === "string" ? message.text : "";
  const warnings: string[] = [];
  if (message.blocks !== undefined) {
    const errors = validateBlocks(message.blocks);
    if (errors.length > 0) return { error: "invalid_blocks", errors, warnings };
  }
  const hasBlocks = Array.isArray(message.blocks) && message.blocks.length > 0;
  if (text === "" && !hasBlocks) return { error: "no_text", errors: [], warnings };
  if (text.length > MESSAGE_TEXT_LIMIT) return { error: "msg_too_long", errors: [], warnings };
  if (text === "") warnings.push("missing_text_fallback: blocks without a top-level text fallback");
  return { errors: [], warnings };
}
