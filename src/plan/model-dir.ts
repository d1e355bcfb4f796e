/**
 * Where a model's files go on the host: one directory per repo *and commit*, so a new revision never
 * overwrites files a running server has open, and a rollback finds the old files where they were.
 */
export function modelDirFor(modelsDir: string, repo: string, sha: string): string {
  return `${modelsDir.replace(/\/+$/, "")}/${repo.replace("/", "--")}--${sha.slice(0, 12)}`;
}
