// A thumbd signed URL (docs/access.md, "Signed URLs"): node sign.mjs KEY_ID HEX_SECRET KIND ASSET [SCALE] [FORMAT] [EXPIRES]
import { createHmac } from "node:crypto";

export function sign(keyId, secretHex, kind, asset, scale = "", format = "", expires = "") {
  const canonical = ["thumbd-url-1", keyId, String(expires), kind, String(scale), format, asset].join("\n");
  const sig = createHmac("sha256", Buffer.from(secretHex, "hex")).update(canonical, "utf8").digest("base64url");
  const query = new URLSearchParams(Object.entries({ scale, format, expires }).filter(([, v]) => String(v) !== ""));
  query.set("key", keyId);
  query.set("sig", sig);
  return `/v1/thumbnails/${encodeURIComponent(kind)}/${asset.split("/").map(encodeURIComponent).join("/")}?${query}`;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop())) console.log(sign(...process.argv.slice(2)));
