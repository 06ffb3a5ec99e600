// A SigV4-verifying proxy in front of a DynamoDB-compatible server
// (dynalite, which checks no signature): every request's signature is
// recomputed with AWS's own JavaScript signer (@smithy/signature-v4, with
// @aws-crypto/sha256-js), from the one access key and secret it knows, over
// the headers the request says it signed, its method, path, query and the
// SHA-256 of the body it carries. A mismatch is answered as DynamoDB
// answers one (400, InvalidSignatureException); a match is forwarded.
//
//   node sigv4verify.mjs --port P --target http://127.0.0.1:Q
//     SIGV4_ACCESS_KEY_ID, SIGV4_SECRET_ACCESS_KEY, SIGV4_REGION, SIGV4_SERVICE
//
// Control routes (never forwarded, never signed):
//   GET  /__verifier           the log: every request's target, X-Amz-Date,
//                              signature, body hash and verdict
//   POST /__verifier/secret    {"secret": "..."}: the secret it now knows
//                              (a rotated key: airlock's becomes wrong)
//   POST /__verifier/throttle  {"target": "DynamoDB_20120810.Scan", "nth": 3}:
//                              the nth verified request of that target is
//                              answered as a throttle instead of forwarded
//   POST /__verifier/reset     empties the log and drops the throttle

import http from "node:http";
import { createHash } from "node:crypto";
import { SignatureV4 } from "@smithy/signature-v4";
import { Sha256 } from "@aws-crypto/sha256-js";

const args = process.argv.slice(2);
const arg = (name) => {
  const i = args.indexOf(name);
  if (i < 0 || i + 1 >= args.length) throw new Error(`missing ${name}`);
  return args[i + 1];
};
const port = Number(arg("--port"));
const target = new URL(arg("--target"));
const accessKeyId = process.env.SIGV4_ACCESS_KEY_ID;
let secretAccessKey = process.env.SIGV4_SECRET_ACCESS_KEY;
const region = process.env.SIGV4_REGION;
const service = process.env.SIGV4_SERVICE;
if (!accessKeyId || !secretAccessKey || !region || !service) {
  throw new Error("SIGV4_ACCESS_KEY_ID, SIGV4_SECRET_ACCESS_KEY, SIGV4_REGION and SIGV4_SERVICE are required");
}

const maxBody = 8 << 20;
const maxLog = 20000;
let log = [];
let throttle = null; // {target, nth, seen}

const authPattern = /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request, SignedHeaders=([a-z0-9;\-]+), Signature=([0-9a-f]{64})$/;
const datePattern = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

// verify says why the request's signature is not what AWS's signer computes
// for it ("" when it is).
async function verify(req, body) {
  const auth = req.headers["authorization"];
  const m = typeof auth === "string" ? authPattern.exec(auth) : null;
  if (!m) return "no AWS4-HMAC-SHA256 Authorization header in the form AWS writes";
  const [, keyId, scopeDate, scopeRegion, scopeService, signedHeaders, signature] = m;
  if (keyId !== accessKeyId) return "an access key id it does not know";
  if (scopeRegion !== region || scopeService !== service) return `the scope names ${scopeRegion}/${scopeService}, not ${region}/${service}`;
  const amzDate = req.headers["x-amz-date"];
  const d = typeof amzDate === "string" ? datePattern.exec(amzDate) : null;
  if (!d) return "no X-Amz-Date in the basic ISO 8601 form";
  if (amzDate.slice(0, 8) !== scopeDate) return "the scope's date is not X-Amz-Date's";
  const signingDate = new Date(Date.UTC(+d[1], +d[2] - 1, +d[3], +d[4], +d[5], +d[6]));
  const bodyHash = createHash("sha256").update(body).digest("hex");
  const declared = req.headers["x-amz-content-sha256"];
  if (declared !== undefined && declared !== bodyHash) return "X-Amz-Content-Sha256 is not the body's SHA-256";
  const names = signedHeaders.split(";");
  for (const need of ["host", "x-amz-date"]) {
    if (!names.includes(need)) return `SignedHeaders leaves out ${need}`;
  }
  const headers = {};
  for (const n of names) {
    const v = req.headers[n];
    if (v === undefined) return `a signed header is not in the request: ${n}`;
    headers[n] = Array.isArray(v) ? v.join(",") : String(v);
  }
  const u = new URL(req.url, "http://verifier");
  const query = {};
  for (const [k, v] of u.searchParams) {
    if (k in query) query[k] = [].concat(query[k], v);
    else query[k] = v;
  }
  // applyChecksum off: the signer would add X-Amz-Content-Sha256 (S3's), which
  // DynamoDB requests neither carry nor sign.
  const signer = new SignatureV4({ credentials: { accessKeyId, secretAccessKey }, region, service, sha256: Sha256, applyChecksum: false });
  const signed = await signer.sign(
    { method: req.method, protocol: "http:", hostname: u.hostname, path: u.pathname, query, headers, body },
    { signingDate, signingRegion: region, signingService: service, signableHeaders: new Set(names) },
  );
  const want = /SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(signed.headers["authorization"]);
  if (!want) return "AWS's signer produced no signature";
  if (want[1] !== signedHeaders) return `AWS's signer signs ${want[1]}, the request says ${signedHeaders}`;
  if (want[2] !== signature) return "signature mismatch";
  return "";
}

function answer(res, status, doc, type = "application/x-amz-json-1.0") {
  const b = Buffer.from(JSON.stringify(doc));
  res.writeHead(status, { "Content-Type": type, "Content-Length": b.length });
  res.end(b);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let n = 0;
    req.on("data", (c) => {
      n += c.length;
      if (n > maxBody) {
        reject(new Error("body too large"));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function forward(req, body, res) {
  const headers = { ...req.headers, host: target.host };
  const up = http.request(
    { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers },
    (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    },
  );
  up.on("error", (e) => answer(res, 502, { message: `the target did not answer: ${e.message}` }, "application/json"));
  up.end(body);
}

const server = http.createServer(async (req, res) => {
  try {
    const body = await readBody(req);
    if (req.url.startsWith("/__verifier")) {
      const doc = body.length ? JSON.parse(body.toString("utf8")) : {};
      if (req.method === "GET" && req.url === "/__verifier") return answer(res, 200, { log }, "application/json");
      if (req.method === "POST" && req.url === "/__verifier/secret") {
        secretAccessKey = String(doc.secret);
        return answer(res, 200, {}, "application/json");
      }
      if (req.method === "POST" && req.url === "/__verifier/throttle") {
        throttle = { target: String(doc.target), nth: Number(doc.nth), seen: 0 };
        return answer(res, 200, {}, "application/json");
      }
      if (req.method === "POST" && req.url === "/__verifier/reset") {
        log = [];
        throttle = null;
        return answer(res, 200, {}, "application/json");
      }
      return answer(res, 404, { message: "no such control route" }, "application/json");
    }
    const why = await verify(req, body);
    const entry = {
      seq: log.length + 1,
      target: String(req.headers["x-amz-target"] ?? ""),
      amz_date: String(req.headers["x-amz-date"] ?? ""),
      signature: (/Signature=([0-9a-f]+)/.exec(String(req.headers["authorization"] ?? "")) ?? [])[1] ?? "",
      signed_headers: (/SignedHeaders=([^,]+)/.exec(String(req.headers["authorization"] ?? "")) ?? [])[1] ?? "",
      body_sha256: createHash("sha256").update(body).digest("hex"),
      verified: why === "",
      why,
      throttled: false,
    };
    if (log.length < maxLog) log.push(entry);
    if (why !== "") {
      // DynamoDB's answer to a signature it does not accept (its message
      // quotes what the request said it signed with, key id included).
      return answer(res, 400, {
        __type: "com.amazon.coral.service#InvalidSignatureException",
        message: `The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details. (${why}; the request's ${String(req.headers["authorization"] ?? "")})`,
      });
    }
    if (throttle && entry.target === throttle.target && ++throttle.seen === throttle.nth) {
      entry.throttled = true;
      return answer(res, 400, {
        __type: "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        message: "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
      });
    }
    forward(req, body, res);
  } catch (e) {
    answer(res, 500, { message: String(e && e.message) }, "application/json");
  }
});
server.listen(port, "127.0.0.1", () => console.log(`sigv4verify: listening on ${port}, forwarding to ${target.href}`));
