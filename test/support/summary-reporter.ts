/**
 * Prints one plain closing line, `Tests: N passed, N failed, N skipped`, after vitest's own
 * summary, so that CI and people reading a log see the counts in a form any tool can parse, and
 * the ten slowest files, so that a suite creeping towards `npm test`'s time budget is seen early
 * (the slowest belong behind `npm run test:slow`).
 */
import type { Reporter, TestModule } from "vitest/node";

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failed++;
        else skipped++;
      }
      if (mod.state() === "failed" && mod.children.size === 0) failed++; // a file that failed to load
    }
    const slowest = testModules
      .map((mod) => ({ file: mod.moduleId.replace(`${process.cwd()}/`, ""), ms: mod.diagnostic().duration }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10);
    if (slowest.length > 1) process.stdout.write(`\nSlowest files: ${slowest.map((s) => `${s.file} ${(s.ms / 1000).toFixed(1)} s`).join(", ")}\n`);
    process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
