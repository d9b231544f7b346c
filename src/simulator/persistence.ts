/**
 * The simulator's state file (`mpf simulator --state-file PATH`, SIMULATOR_STATE_PATH): the
 * simulator stands for a provider that persists, so its swaps, links and ledger outlive a restart.
 * `mpf cluster up` keeps it in its state dir (kept with --keep-data), so a link parked before
 * `cluster down` can still be paid after `cluster up --keep-data`, and the ledger still answers
 * for what happened before.
 *
 * Written at once when the provider's records change (a swap initialised, confirmed or burnt, a
 * link created, paid or failed: before the provider answers, as a database commit would be),
 * soon after a request is only recorded (at most every SAVE_DELAY_MS), and at close; always to a
 * temporary file renamed over the old one, so a crash leaves the previous or the new state, never
 * half of one. Each save writes the whole state: meant for the simulator's volumes (the tests,
 * the demo, `mpf cluster up`), not a benchmark's (the bench runs its simulator without a file).
 * Mode 0600: it holds the auth_tokens the simulator issued. Not kept: notifications still being
 * retried at the moment of a restart (`mpf sim notify` sends one again).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Ledger, LedgerSnapshot } from './ledger';
import type { SimState, StateSnapshot } from './state';

const VERSION = 1;
const SAVE_DELAY_MS = 100;

interface SimSnapshot {
  version: number;
  savedAt: string;
  state: StateSnapshot;
  ledger: LedgerSnapshot;
}

export class SimStateFile {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly file: string,
    private readonly state: SimState,
    private readonly ledger: Ledger,
  ) {}

  /** Loads the file when there is one: how many swaps and links it held; undefined without a file. */
  load(): { swaps: number; links: number } | undefined {
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`simulator state file ${this.file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? 'error'})`, { cause: e });
    }
    let snap: SimSnapshot;
    try {
      snap = JSON.parse(text) as SimSnapshot;
    } catch (e) {
      throw new Error(`simulator state file ${this.file}: not JSON; move it away to start empty`, { cause: e });
    }
    if (snap.version !== VERSION || !snap.state || !snap.ledger) throw new Error(`simulator state file ${this.file}: not a version ${VERSION} state file; move it away to start empty`);
    this.state.restore(snap.state);
    this.ledger.restore(snap.ledger);
    return { swaps: snap.state.swaps.length, links: snap.state.links.length };
  }

  /** Saves soon (changes within SAVE_DELAY_MS are saved together). */
  schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.saveNow();
    }, SAVE_DELAY_MS);
    this.timer.unref();
  }

  saveNow(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const snap: SimSnapshot = { version: VERSION, savedAt: new Date().toISOString(), state: this.state.snapshot(), ledger: this.ledger.snapshot() };
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(snap), { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }
}
