/**
 * One at a time per key: work for one log origin runs in the order it arrived, each piece after
 * the previous one ended (well or not), while work for other origins runs alongside. The check
 * of a request's old size and the write of the new state are one step under this queue, which is
 * the atomic compare-and-set tlog-witness asks for.
 */
export class OriginQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `fn` after every earlier `run` for `key` has settled; resolves or rejects as `fn` does. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const result = before.then(fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with work queued or running. */
  get busy(): number {
    return this.tails.size;
  }

  /** Resolves when every piece of work queued so far has settled. */
  async idle(): Promise<void> {
    while (this.tails.size > 0) await Promise.all(this.tails.values());
  }
}
