// OpenSSL's libcrypto (Debian's libssl-dev): SHA-256 for bearer tokens, HMAC-SHA256 for signed
// URLs, CRYPTO_memcmp for comparisons that take the same time whatever the bytes.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
