import { describe, expect, it } from "vitest";
import { AddressPolicy, checkAddress, FORBIDDEN_IPV4, FORBIDDEN_IPV6 } from "./address.js";

describe("checkAddress", () => {
  it.each([
    // IPv4 ranges of the seed, one address inside each
    ["0.1.2.3", "forbidden_range", "0.0.0.0/8"],
    ["10.0.0.1", "forbidden_range", "10.0.0.0/8"],
    ["172.16.0.1", "forbidden_range", "172.16.0.0/12"],
    ["172.31.255.255", "forbidden_range", "172.16.0.0/12"],
    ["192.168.1.1", "forbidden_range", "192.168.0.0/16"],
    ["100.64.0.1", "forbidden_range", "100.64.0.0/10"],
    ["127.0.0.1", "forbidden_range", "127.0.0.0/8"],
    ["169.254.169.254", "forbidden_range", "169.254.0.0/16"],
    ["192.0.0.8", "forbidden_range", "192.0.0.0/24"],
    ["192.0.2.1", "forbidden_range", "192.0.2.0/24"],
    ["198.51.100.1", "forbidden_range", "198.51.100.0/24"],
    ["203.0.113.1", "forbidden_range", "203.0.113.0/24"],
    ["192.88.99.1", "forbidden_range", "192.88.99.0/24"],
    ["198.18.0.1", "forbidden_range", "198.18.0.0/15"],
    ["198.19.255.255", "forbidden_range", "198.18.0.0/15"],
    ["224.0.0.1", "forbidden_range", "224.0.0.0/4"],
    ["240.0.0.1", "forbidden_range", "240.0.0.0/4"],
    ["255.255.255.255", "forbidden_range", "240.0.0.0/4"],
    // IPv6 ranges
    ["::", "forbidden_range", "::/96"],
    ["::1", "forbidden_range", "::/96"],
    ["::127.0.0.1", "forbidden_range", "::/96"],
    ["::7f00:1", "forbidden_range", "::/96"],
    ["::808:808", "forbidden_range", "::/96"],
    ["64:ff9b:1::1", "forbidden_range", "64:ff9b:1::/48"],
    ["100::1", "forbidden_range", "100::/64"],
    ["2001::1", "forbidden_range", "2001::/23"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "forbidden_range", "2001::/23"],
    ["2001:db8::1", "forbidden_range", "2001:db8::/32"],
    ["3fff::1", "forbidden_range", "3fff::/20"],
    ["fc00::1", "forbidden_range", "fc00::/7"],
    ["fd12:3456::1", "forbidden_range", "fc00::/7"],
    ["fe80::1", "forbidden_range", "fe80::/10"],
    ["fec0::1", "forbidden_range", "fec0::/10"],
    ["ff02::1", "forbidden_range", "ff00::/8"],
    // IPv4 hidden inside IPv6, checked as IPv4
    ["::ffff:10.0.0.1", "forbidden_range", "10.0.0.0/8"],
    ["::ffff:127.0.0.1", "forbidden_range", "127.0.0.0/8"],
    ["::ffff:a9fe:a9fe", "forbidden_range", "169.254.0.0/16"],
    ["::ffff:0:10.0.0.1", "forbidden_range", "10.0.0.0/8"],
    ["::ffff:0:8.8.8.8", "forbidden_range", "::ffff:0:0:0/96"],
    ["64:ff9b::a00:1", "forbidden_range", "10.0.0.0/8"],
    ["64:ff9b::10.0.0.1", "forbidden_range", "10.0.0.0/8"],
    ["64:ff9b::7f00:1", "forbidden_range", "127.0.0.0/8"],
    ["2002:0a00:0001::", "forbidden_range", "10.0.0.0/8"],
    ["2002:a9fe:a9fe::1", "forbidden_range", "169.254.0.0/16"],
    ["2002:c0a8:0101::", "forbidden_range", "192.168.0.0/16"],
  ])("refuses %s (%s, %s)", (address, code, range) => {
    expect(checkAddress(address)).toEqual({ ok: false, code, range });
  });

  it.each([
    ["fe80::1%eth0", "zoned_address"],
    ["fe80::1%25eth0", "zoned_address"],
    ["2001:4860::1%1", "zoned_address"],
    ["", "invalid_address"],
    ["not-an-ip", "invalid_address"],
    ["0177.0.0.1", "invalid_address"],
    ["2130706433", "invalid_address"],
    ["0x7f.1", "invalid_address"],
    ["127.1", "invalid_address"],
    ["8.8.8.8.8", "invalid_address"],
    ["[2001:4860::1]", "invalid_address"],
    // outside the seed's list but not global unicast (IPv6 outside 2000::/3), or mapped/NAT64
    // forms of a public address, which are refused rather than dialed through a translator
    ["::ffff:8.8.8.8", "not_global_unicast"],
    ["64:ff9b::808:808", "not_global_unicast"],
    ["4000::1", "not_global_unicast"],
    ["e000::1", "not_global_unicast"],
  ])("refuses %s as %s", (address, code) => {
    const v = checkAddress(address);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.code).toBe(code);
  });

  it.each([
    ["8.8.4.4", "8.8.4.4", 4],
    ["1.1.1.1", "1.1.1.1", 4],
    ["100.63.255.255", "100.63.255.255", 4],
    ["100.128.0.0", "100.128.0.0", 4],
    ["172.15.255.255", "172.15.255.255", 4],
    ["172.32.0.0", "172.32.0.0", 4],
    ["198.20.0.0", "198.20.0.0", 4],
    ["2001:4860:4860::8888", "2001:4860:4860::8888", 6],
    ["2001:4860:4860:0:0:0:0:8888", "2001:4860:4860::8888", 6],
    ["2606:4700::1111", "2606:4700::1111", 6],
    ["2002:0808:0808::1", "2002:808:808::1", 6],
    ["2001:200::1", "2001:200::1", 6],
  ])("allows the public address %s", (address, canonical, family) => {
    expect(checkAddress(address)).toEqual({ ok: true, address: canonical, family });
  });

  it("lists exactly the seed's ranges plus the IPv4-translated prefix", () => {
    expect(FORBIDDEN_IPV4.map((p) => p.cidr)).toHaveLength(15);
    expect(FORBIDDEN_IPV6.map((p) => p.cidr)).toEqual([
      "::/96", "::ffff:0:0:0/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "3fff::/20", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    ]);
  });
});

describe("AddressPolicy", () => {
  it("refuses configured extra deny ranges, also inside embedded IPv4", () => {
    const p = new AddressPolicy({ extraDenyCidrs: ["8.8.0.0/16", "2606:4700::/32"] });
    expect(p.check("8.8.4.4")).toEqual({ ok: false, code: "denied_cidr", range: "8.8.0.0/16" });
    expect(p.check("2002:0808:0404::")).toEqual({ ok: false, code: "denied_cidr", range: "8.8.0.0/16" });
    expect(p.check("2606:4700::1111")).toEqual({ ok: false, code: "denied_cidr", range: "2606:4700::/32" });
    expect(p.check("1.1.1.1").ok).toBe(true);
  });

  it("refuses the proxy's own addresses", () => {
    const p = new AddressPolicy({ ownAddresses: ["203.0.114.7", "2001:4860::7", "fe80::1%eth0"] });
    expect(p.check("203.0.114.7")).toEqual({ ok: false, code: "own_address" });
    expect(p.check("2001:4860:0::7")).toEqual({ ok: false, code: "own_address" });
    expect(p.check("203.0.114.8").ok).toBe(true);
  });

  it("refuses to build with an unparsable deny CIDR", () => {
    expect(() => new AddressPolicy({ extraDenyCidrs: ["10.0.0.0/33"] })).toThrow(/invalid deny CIDR/);
    expect(() => new AddressPolicy({ extraDenyCidrs: ["pods"] })).toThrow(/invalid deny CIDR/);
  });
});
