// Functions told of a state's events (the transcript store, the evaluation report, the session).

export class Listeners<E> {
  private readonly fns = new Set<(ev: E) => void>();

  /** `failure` names what a listener that throws was doing, in the console's error. */
  constructor(private readonly failure: string) {}

  /** Call `fn` with each event; returns the function that stops it. */
  subscribe(fn: (ev: E) => void): () => void {
    this.fns.add(fn);
    return () => this.fns.delete(fn);
  }

  /** Tell every listener of `ev`; one that throws is logged and the others are still told. */
  emit(ev: E): void {
    for (const fn of [...this.fns]) {
      try {
        fn(ev);
      } catch (err) {
        console.error(`anvia: ${this.failure} failed`, err);
      }
    }
  }

  clear(): void {
    this.fns.clear();
  }
}
