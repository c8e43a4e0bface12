/** Time as a dependency, so expiry rules (1-hour tokens, 10-minute codes) are tested without waiting. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests move by hand. It starts at the real time and only moves when told. */
export class ManualClock implements Clock {
  private offsetMs = 0;
  private frozenAtMs: number | undefined;
  now(): Date {
    return new Date((this.frozenAtMs ?? Date.now()) + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  /** From now on only `advance` moves it: rules counted in seconds stay exact however slowly the machine runs. */
  freeze(): void {
    this.frozenAtMs ??= Date.now();
  }
}
