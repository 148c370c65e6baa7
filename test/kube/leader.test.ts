import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LeaderElector } from "../../src/kube/leader.js";
import { FakeApiServer } from "./fake-apiserver.js";

describe("LeaderElector against the fake API server", () => {
  let server: FakeApiServer;
  let clock: number;
  const now = (): Date => new Date(clock);
  const elector = (identity: string): LeaderElector =>
    new LeaderElector(server.kubeConfig(), { identity, now, leaseDurationSeconds: 15, renewDeadlineSeconds: 10 });

  beforeEach(async () => {
    server = await FakeApiServer.start();
    clock = Date.UTC(2026, 10, 1);
  });
  afterEach(async () => {
    await server.close();
  });

  it("lets exactly one of two replicas lead, and the other take over only after the lease expires", async () => {
    const a = elector("pod-a");
    const b = elector("pod-b");
    expect(await a.tryAcquireOrRenew()).toBe(true);
    expect(await b.tryAcquireOrRenew()).toBe(false);
    expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);
    const lease = server.get("coordination.k8s.io/v1", "Lease", "openfief", "openfief-operator");
    expect(lease?.["spec"]).toMatchObject({ holderIdentity: "pod-a", leaseDurationSeconds: 15, leaseTransitions: 0 });

    clock += 5_000;
    expect(await a.tryAcquireOrRenew()).toBe(true); // renewed: b must see the new record expire
    clock += 1_000;
    expect(await b.tryAcquireOrRenew()).toBe(false); // b first sees the renewed record now
    clock += 14_000;
    expect(await b.tryAcquireOrRenew()).toBe(false); // 14 s of the 15 s lease
    clock += 1_000; // a stopped renewing 16 s ago; b has seen the same record for 15 s
    expect(a.isLeader()).toBe(false); // past a's renew deadline: it stepped down first
    expect(await b.tryAcquireOrRenew()).toBe(true);
    expect(await a.tryAcquireOrRenew()).toBe(false);
    expect([a.isLeader(), b.isLeader()]).toEqual([false, true]);
    expect(server.get("coordination.k8s.io/v1", "Lease", "openfief", "openfief-operator")?.["spec"]).toMatchObject({ holderIdentity: "pod-b", leaseTransitions: 1 });
  });

  it("writes every renewal with the resourceVersion it read, so a concurrent write makes it lose with 409", async () => {
    const a = elector("pod-a");
    expect(await a.tryAcquireOrRenew()).toBe(true);
    const puts = server.requests.filter((r) => r.method === "PUT");
    expect(puts).toEqual([]);
    clock += 1_000;
    await a.tryAcquireOrRenew();
    const put = server.requests.filter((r) => r.method === "PUT").at(-1);
    expect(put?.path).toBe("/apis/coordination.k8s.io/v1/namespaces/openfief/leases/openfief-operator");
    expect((put?.body as { metadata: { resourceVersion?: string } }).metadata.resourceVersion).toMatch(/^\d+$/);

    // Another replica takes the lease between our read and our write: simulate with a stale read.
    const lease = server.get("coordination.k8s.io/v1", "Lease", "openfief", "openfief-operator");
    server.put({ ...lease, spec: { ...(lease?.["spec"] as object), holderIdentity: "pod-z" } });
    clock += 1_000;
    expect(await a.tryAcquireOrRenew()).toBe(false);
    expect(a.isLeader()).toBe(false);
  });

  it("lets the other replica take over at once after a release", async () => {
    const a = elector("pod-a");
    const b = elector("pod-b");
    await a.tryAcquireOrRenew();
    expect(await b.tryAcquireOrRenew()).toBe(false);
    await a.release();
    expect(a.isLeader()).toBe(false);
    expect(await b.tryAcquireOrRenew()).toBe(true);
  });

  it("releases after the round under way when asked mid-round, and that round starts no other", async () => {
    const a = elector("pod-a");
    const b = elector("pod-b");
    const started: string[] = [];
    // The first round is in flight when the release comes: it must not land after it.
    a.run({ onStarted: () => started.push("started"), onStopped: () => started.push("stopped") });
    await a.release();
    expect(a.isLeader()).toBe(false);
    expect(await b.tryAcquireOrRenew()).toBe(true);
    expect(started).toEqual([]);
  });

  it("never lets both replicas lead when they race for a missing lease", async () => {
    const a = elector("pod-a");
    const b = elector("pod-b");
    const results = await Promise.all([a.tryAcquireOrRenew(), b.tryAcquireOrRenew()]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect([a.isLeader(), b.isLeader()].filter(Boolean)).toHaveLength(1);
  });

  it("refuses a renew deadline that is not shorter than the lease", () => {
    expect(() => new LeaderElector(server.kubeConfig(), { identity: "x", leaseDurationSeconds: 10, renewDeadlineSeconds: 10 })).toThrow(/renew deadline/);
  });
});
