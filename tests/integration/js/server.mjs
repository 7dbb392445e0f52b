// A cairn server for the node tests: started on 127.0.0.1 with a random free port and a fresh
// folder (CAIRN_BIN, default build/cairn), non-default credentials; stop() ends it and removes
// the folder. withLogTail(srv, fn) wraps a test so a failure carries the server's log tail.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
export const CAIRN_BIN = resolve(process.env.CAIRN_BIN || join(HERE, "..", "..", "..", "build", "cairn"));
export const ACCESS = "cairnadmin";
export const SECRET = "cairnsecret123";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function startCairn() {
  if (!existsSync(CAIRN_BIN)) throw new Error(`cairn binary not found: ${CAIRN_BIN}`);
  const srv = { root: mkdtempSync(join(tmpdir(), "cairn-js-")), log: "", proc: null, port: 0 };
  srv.logTail = () => srv.log.split("\n").slice(-25).join("\n");
  srv.stop = async () => {
    const p = srv.proc;
    if (p && p.exitCode === null && p.signalCode === null) {
      p.kill("SIGTERM");
      const t = Date.now();
      while (p.exitCode === null && p.signalCode === null && Date.now() - t < 5000) await sleep(50);
      if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
    }
    rmSync(srv.root, { recursive: true, force: true });
  };
  for (let attempt = 0; attempt < 8; attempt++) {
    srv.port = 9400 + Math.floor(Math.random() * 200);
    srv.log = "";
    const p = spawn(CAIRN_BIN, ["server", join(srv.root, "data"), "--address", `127.0.0.1:${srv.port}`], {
      env: { ...process.env, CAIRN_ROOT_USER: ACCESS, CAIRN_ROOT_PASSWORD: SECRET },
      stdio: ["ignore", "pipe", "pipe"],
    });
    srv.proc = p;
    p.stdout.on("data", (d) => { srv.log += d; });
    p.stderr.on("data", (d) => { srv.log += d; });
    let exited = false;
    p.on("exit", () => { exited = true; });
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline && !exited) {
      try {
        const r = await fetch(`http://127.0.0.1:${srv.port}/minio/health/live`);
        if (r.status === 200) return srv;
      } catch { /* not yet */ }
      await sleep(50);
    }
    if (!exited) {
      p.kill("SIGKILL");
      await srv.stop();
      throw new Error(`cairn did not start:\n${srv.log}`);
    }
    if (!/in use/i.test(srv.log)) {
      await srv.stop();
      throw new Error(`cairn exited at start:\n${srv.log}`);
    }
  }
  await srv.stop();
  throw new Error("no free port");
}

export function withLogTail(getSrv, fn) {
  return async (t) => {
    try {
      await fn(t);
    } catch (e) {
      const srv = getSrv();
      if (srv) e.message += `\n--- cairn log tail ---\n${srv.logTail()}`;
      throw e;
    }
  };
}
