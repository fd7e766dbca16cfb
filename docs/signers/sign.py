# A thumbd signed URL (docs/access.md, "Signed URLs"): python3 sign.py KEY_ID HEX_SECRET KIND ASSET [SCALE] [FORMAT] [EXPIRES]
import base64, hashlib, hmac, sys, urllib.parse

def sign(key_id, secret_hex, kind, asset, scale="", fmt="", expires=""):
    canonical = "\n".join(["thumbd-url-1", key_id, str(expires), kind, str(scale), fmt, asset])
    mac = hmac.new(bytes.fromhex(secret_hex), canonical.encode(), hashlib.sha256).digest()
    query = {n: v for n, v in (("scale", scale), ("format", fmt), ("expires", expires)) if str(v) != ""}
    query.update(key=key_id, sig=base64.urlsafe_b64encode(mac).rstrip(b"=").decode())
    return (f"/v1/thumbnails/{urllib.parse.quote(kind, safe='')}/{urllib.parse.quote(asset)}?"
            + urllib.parse.urlencode(query, quote_via=urllib.parse.quote))

if __name__ == "__main__":
    print(sign(*sys.argv[1:]))
