/** The package's own version (package.json), for `mpf --version` and the release's build id. */
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

export function packageVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(path.join(ROOT, 'package.json')) as { version: string }).version;
}
