// A one-line progress bar on a terminal; nothing until the summary line elsewhere (logs, CI).

/** Reports progress through one epoch. */
export class ProgressBar {
  private readonly interactive: boolean;
  private lastDraw = 0;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly stream: NodeJS.WriteStream = process.stdout,
  ) {
    this.interactive = stream.isTTY === true;
  }

  /** Redraws the bar (at most every 100 ms) with `done` of `total` steps and a status text. */
  update(done: number, status: string): void {
    if (!this.interactive) return;
    const now = performance.now();
    if (done < this.total && now - this.lastDraw < 100) return;
    this.lastDraw = now;
    const width = 30;
    const filled = Math.round((done / this.total) * width);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
    this.stream.write(
      `\r${this.label} ${bar} ${String(done).padStart(String(this.total).length)}/${this.total} ${status}\x1b[K`,
    );
  }

  /** Clears the bar so that the next line starts clean. */
  done(): void {
    if (this.interactive) this.stream.write('\r\x1b[K');
  }
}
