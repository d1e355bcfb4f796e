import { CodedError } from "../errors.ts";

/** The command channel could not be opened, so the command never ran and may be retried. */
export class ChannelOpenError extends CodedError {
  constructor(inner: CodedError) {
    super(inner.code, inner.message, inner.fix, { cause: inner.cause });
  }
}
