/**
 * One deadline helper for every port the proxy waits on (reviewer, resolver, the first allow-list
 * read): a port that does not answer in time gets a fixed answer instead, never a hang.
 */

/**
 * Settles with `work`, or with `onTimeout` after `ms`. The timer is unref'd (it never keeps the
 * process alive) and cleared as soon as `work` settles.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(onTimeout), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => {
    if (timer !== undefined) clearTimeout(timer);
  });
}
