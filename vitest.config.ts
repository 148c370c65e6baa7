import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts", "sdk/**/*.test.ts", "plugins/**/*.test.ts", "migrations/**/*.test.ts", "bench/**/*.test.ts"],
    exclude: ["**/node_modules/**", "dist/**"],
    pool: "forks",
    testTimeout: 20_000,
    hookTimeout: 60_000,
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
