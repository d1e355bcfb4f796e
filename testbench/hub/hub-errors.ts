/**
 * Error answers of the Hub, with the status codes, `X-Error-Code` / `X-Error-Message` headers and
 * bodies that huggingface_hub's `hf_raise_for_status` maps to its exceptions
 * (RepositoryNotFoundError, GatedRepoError, RevisionNotFoundError, RemoteEntryNotFoundError, …).
 */

export interface HubError {
  status: number;
  /** `X-Error-Code`; absent for plain HTTP errors. */
  code?: "RepoNotFound" | "RevisionNotFound" | "GatedRepo" | "EntryNotFound";
  message: string;
  /** Extra headers, e.g. `X-Repo-Commit` on EntryNotFound. */
  headers?: Record<string, string>;
}

/** Missing repo, or private repo without access: 401 to anonymous callers, 404 to authenticated ones. */
export function repoNotFound(authenticated: boolean): HubError {
  return { status: authenticated ? 404 : 401, code: "RepoNotFound", message: "Repository not found" };
}

export function revisionNotFound(revision: string): HubError {
  return { status: 404, code: "RevisionNotFound", message: `Invalid rev id: ${revision}` };
}

export function gatedNoToken(repo: string): HubError {
  return {
    status: 401,
    code: "GatedRepo",
    message: `Access to model ${repo} is restricted. You must have access to it and be authenticated to access it. Please log in.`,
  };
}

export function gatedNotApproved(repo: string, hubUrl: string): HubError {
  return {
    status: 403,
    code: "GatedRepo",
    message: `Access to model ${repo} is restricted and you are not in the authorized list. Visit ${hubUrl}/${repo} to ask for access.`,
  };
}

export function entryNotFound(sha: string): HubError {
  return {
    status: 404,
    code: "EntryNotFound",
    message: "Entry not found",
    headers: { "X-Repo-Commit": sha },
  };
}

export function invalidCredentials(): HubError {
  return { status: 401, message: "Invalid credentials in Authorization header" };
}

export function pageNotFound(): HubError {
  return { status: 404, message: "Sorry, we can't find the page you are looking for." };
}

/** Bodies the Hub sends with 5xx/429 answers. */
export function serverError(status: number): HubError {
  switch (status) {
    case 429:
      return { status, message: "You have exceeded our rate limit. Please retry later." };
    case 502:
      return { status, message: "Bad Gateway" };
    case 503:
      return { status, message: "Service Unavailable" };
    case 504:
      return { status, message: "Gateway Timeout" };
    default:
      return { status, message: "Internal Error - We're working hard to fix this as soon as possible!" };
  }
}
