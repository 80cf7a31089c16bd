// Coalesce work to at most once per animation frame, per key.

const queue = new Map<object, () => void>();
let scheduled = false;

const raf: (cb: () => void) => void =
  typeof requestAnimationFrame === "function"
    ? (cb) => requestAnimationFrame(() => cb())
    : (cb) => setTimeout(cb, 16);

/** Run `fn` in the next frame; a later call with the same key replaces (and goes after) the earlier one. */
export function schedule(key: object, fn: () => void): void {
  queue.delete(key);
  queue.set(key, fn);
  if (!scheduled) {
    scheduled = true;
    raf(flushFrames);
  }
}

export function cancelScheduled(key: object): void {
  queue.delete(key);
}

/** Run everything scheduled now (also used by tests). */
export function flushFrames(): void {
  scheduled = false;
  const jobs = [...queue.values()];
  queue.clear();
  for (const job of jobs) {
    try {
      job();
    } catch (err) {
      console.error("anvia: render error", err);
    }
  }
}
