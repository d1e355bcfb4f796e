/* What the poster is asked: a message's options and metadata, a file to upload, a message found again. */

export interface PostOptions {
  threadTs?: string;
  /** Also show a thread reply in the channel (used for a swap's final outcome only). */
  broadcast?: boolean;
  /** Slack's message metadata: finds the message again later (a post whose answer was lost). */
  metadata?: PostMetadata;
  /** Ahead of every call that is not (a plan to approve, an ended swap's outcome): see Pacer. */
  urgent?: boolean;
  /** Whose call this is (a swap's id): `hurry(tag)` makes its waiting and later calls urgent. */
  tag?: string;
}

/** What modelswap marks its reports with (https://docs.slack.dev/messaging/message-metadata). */
export interface PostMetadata {
  event_type: string;
  event_payload: Record<string, string | number | boolean>;
}

/** A message as conversations.history and conversations.replies give it back: its ts and metadata. */
export interface FoundMessage {
  ts: string;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
}

export interface UploadFile {
  bytes: Buffer;
  filename: string;
  /** Shown above the file in Slack. */
  title: string;
  /** For screen readers (Slack takes up to 1000 characters). */
  altText?: string;
}

export interface UploadOptions {
  /** Upload into this thread. */
  threadTs?: string;
  /** The message the file is shared with. */
  comment?: string;
  urgent?: boolean;
  /** As PostOptions.tag. */
  tag?: string;
}
