import { defineConfig } from "vitest/config";

// Soak, torture and deep-fuzz suites are named *.slow.test.ts and run only under `npm run test:slow`,
// so that `npm test` stays well inside its time on two cores.
const slow = process.env.OPENFIEF_SLOW === "1";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts", "sdk/**/*.test.ts", "plugins/**/*.test.ts", "migrations/**/*.test.ts", "bench/**/*.test.ts"],
    exclude: ["**/node_modules/**", "dist/**", ...(slow ? [] : ["**/*.slow.test.ts"])],
    pool: "forks",
    // Vitest's default is one worker fewer than the cores, so one on a two-core machine; most files
    // wait on processes, sockets and a browser rather than the CPU, and two workers finish sooner.
    maxWorkers: 2,
    // Each file importing the whole module graph afresh cost more than its tests (318 s of imports in
    // an 11-minute run); the files share a worker's modules instead. Nothing relies on a fresh graph:
    // no file mocks modules, and every file restores the environment it changes.
    isolate: false,
    // The RE2 engine, as every process of the product has it (docs/adr/0188).
    setupFiles: ["./test/support/pattern-engine.ts"],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
